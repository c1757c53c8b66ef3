// session.js: the admin key's session. Every call to /api/admin/... goes through api with
// "Authorization: Bearer <key>"; a 401 forgets the key and asks again, a 404 NOT_FOUND means the server has no
// admin.key, so the admin API is off. It also signs in and out, and opens the console (and its stream) once
// the key is right.

import { t } from '../i18n.js';
import { el } from './dom.js';
import { render } from './render.js';
import { msg, saveKey, serverMsg, st } from './state.js';
import { openStream, stopStream } from './stream.js';

// api calls the admin API with the key. It returns {ok, status, data, code, message}; a 401 (wrong key)
// and a 404 NOT_FOUND (admin API off) change the page before it returns. With opts.own404, a 404 is the
// caller's to read: a route a panel needs may be missing from an older server whose admin API is on.
export async function api(method, path, body, opts) {
  const headers = { Accept: 'application/json' };
  const sentKey = st.key;
  if (sentKey) headers.Authorization = 'Bearer ' + sentKey;
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (_) {
    return { ok: false, status: 0, data: null, code: '', message: t('admin.networkError') };
  }
  const data = await res.json().catch(() => null);
  const err = data && typeof data.error === 'object' && data.error ? data.error : null;
  const out = {
    ok: res.ok,
    status: res.status,
    data,
    code: err ? String(err.code || '') : '',
    message: err ? String(err.message || '') : res.ok ? '' : t('admin.failed', { status: res.status }),
  };
  if (res.status === 401 && st.key === sentKey) wrongKey(Boolean(sentKey));
  else if (isAPIOff(res.status, out.code) && !(opts && opts.own404)) apiOff();
  return out;
}

// isAPIOff: the routes of /api/admin do not exist. (An unknown screening is a 404 too, with its own code.)
function isAPIOff(status, code) {
  return status === 404 && (code === '' || code === 'NOT_FOUND');
}

// errorMessage is the server's refusal as shown on the page: its message and code.
export function errorMessage(r) {
  return serverMsg('bad', t('admin.error', { msg: r.message, code: r.code }));
}

// handled: the answer already changed the page (wrong key, API off).
export function handled(r) {
  return r.status === 401 || isAPIOff(r.status, r.code);
}

// check asks the server whether the admin API is on and the key (if any) is right.
export async function check() {
  setView('checking');
  const r = await api('GET', '/api/admin/screenings');
  if (r.ok) {
    openConsole(r.data);
  } else if (!handled(r)) {
    st.problem = 'network';
    st.problemMessage = r.status === 0 ? msg('warn', 'admin.networkError') : errorMessage(r);
    setView('problem');
  }
}

// wrongKey forgets the key and asks for one; hadKey says whether one was refused (else none was sent).
export function wrongKey(hadKey) {
  stopStream();
  st.key = '';
  saveKey('');
  st.loginBusy = false;
  st.loginMessage = hadKey ? msg('bad', 'admin.wrongKey') : null;
  setView('login');
  el.key.value = '';
  el.key.focus();
}

// apiOff says the admin API is off (the server has no admin.key); there is nothing to sign in to.
export function apiOff() {
  stopStream();
  st.problem = 'off';
  st.problemMessage = msg('warn', 'admin.off');
  setView('problem');
}

// openConsole shows the console with the screenings of list and opens the stream the first time.
function openConsole(list) {
  if (Array.isArray(list)) st.screenings = list.filter((s) => s && typeof s.id === 'string');
  const was = st.view;
  setView('console');
  if (was !== 'console') {
    requestAnimationFrame(() => el.selectedHeading.focus());
    openStream();
  }
}

function setView(v) {
  st.view = v;
  render();
}

// signIn checks the key typed in with a call to the admin API and keeps it for this tab if it is right.
export async function signIn(e) {
  e.preventDefault();
  if (st.loginBusy) return;
  const k = el.key.value.trim();
  if (!k) {
    st.loginMessage = msg('bad', 'admin.keyEmpty');
    render();
    el.key.focus();
    return;
  }
  st.key = k;
  st.loginBusy = true;
  st.loginMessage = null;
  render();
  const r = await api('GET', '/api/admin/screenings');
  st.loginBusy = false;
  if (r.ok) {
    saveKey(k);
    el.key.value = '';
    openConsole(r.data);
  } else if (!handled(r)) {
    st.key = '';
    st.loginMessage = r.status === 0 ? msg('bad', 'admin.networkError') : errorMessage(r);
    render();
  }
}

// signOut forgets the key and asks for one again.
export function signOut() {
  stopStream();
  st.key = '';
  saveKey('');
  st.loginMessage = null;
  setView('login');
  el.key.focus();
}
