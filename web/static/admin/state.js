// state.js: what the control room knows: the admin key (sessionStorage "waitroom:admin-key": this tab only),
// the view, the screenings of the latest frame with those an action just returned, the selection (the URL's
// hash), the forms' progress and messages, and the schedule of the stream's next reopening.

import { t } from '../i18n.js';
import { Reconnect } from '../lib/reconnect.js';

const keyStoreName = 'waitroom:admin-key';

// Backoff after the stream ends (lib/reconnect.js): the n-th retry waits between half and all of
// min(cap, base × 2^n).
const backoffBaseMs = 1000;
const backoffCapMs = 30000;

// mergeHoldMs: how long a screening returned by an action stands in for the one in the frames (see merge).
const mergeHoldMs = 1200;

// readKey and saveKey keep the admin key for this tab only.
function readKey() {
  try {
    return sessionStorage.getItem(keyStoreName) || '';
  } catch (_) {
    return '';
  }
}

export function saveKey(k) {
  try {
    if (k) sessionStorage.setItem(keyStoreName, k);
    else sessionStorage.removeItem(keyStoreName);
  } catch (_) { /* storage off: the key lasts as long as this page */ }
}

// A message on the page: a string key of i18n.js with its values (translated when drawn, so a change of
// language applies), or a text from the server.
export const msg = (kind, k, v) => ({ kind, k, v });
export const serverMsg = (kind, text) => ({ kind, text });
export const msgText = (m) => (!m ? '' : m.k ? t(m.k, m.v) : m.text);

// st is what the page shows; render() draws it.
export const st = {
  view: 'checking', // checking | problem | login | console
  problem: '', // off | network
  key: readKey(),
  loginBusy: false,
  loginMessage: null,
  stream: 'connecting', // connecting | open | reconnecting
  streamProblem: '',
  screenings: [], // the latest list of S
  instances: [],
  notifications: null, // the e-mail notices' figures of the latest frame, when it has them at its top level
  lastAtMs: 0, // server time of the latest frame
  selected: selectedFromHash(),
  busy: false,
  actionMessage: null,
  admissionFor: '', // the screening the admission form was filled for
  admissionBase: null, // the settings it was filled with
  admissionDirty: false,
  admissionBusy: false,
  admissionMessage: null,
  createBusy: false,
  createMessage: null,
};

// recent holds the screenings the API just returned (see merge).
const recent = new Map();

// selectedFromHash is the screening named in the URL (/admin#id), so a reload keeps the selection.
export function selectedFromHash() {
  try {
    return decodeURIComponent(location.hash.slice(1));
  } catch (_) {
    return '';
  }
}

export function selectedScreening() {
  return st.screenings.find((s) => s.id === st.selected) || null;
}

// merge puts a screening the API returned into the list, so the page shows it before the next frame. For
// a moment it also stands in for the screening of the frames that arrive, as one of them may have been
// read before the change (a paused screening would seem to run again for a second, a new one to vanish).
export function merge(s) {
  if (!s || typeof s.id !== 'string') return;
  const i = st.screenings.findIndex((x) => x.id === s.id);
  if (i >= 0) st.screenings[i] = s;
  else st.screenings.push(s);
  recent.set(s.id, { s, untilMs: Date.now() + mergeHoldMs });
}

// holdMerged puts the screenings merged a moment ago into a frame's list.
export function holdMerged() {
  const now = Date.now();
  for (const [id, r] of recent) {
    if (now > r.untilMs) {
      recent.delete(id);
      continue;
    }
    const i = st.screenings.findIndex((x) => x.id === id);
    if (i >= 0) st.screenings[i] = r.s;
    else st.screenings.push(r.s);
  }
}

// streamRetry counts the reopenings since the last frame and holds the pending one.
export const streamRetry = new Reconnect({ baseMs: backoffBaseMs, capMs: backoffCapMs });
