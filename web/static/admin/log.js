// log.js: the admission log of the selected screening (GET /api/admin/screenings/{id}/log, read every few
// seconds while the console shows it): whether the server keeps it, the records stored, the latest signed
// checkpoint's size and age, the records still waiting in Redis to be stored; a link to the public
// checkpoint and the `waitroom verify-log` command line to copy; and the export of the whole log as a
// .tar.gz (GET .../log/export, fetched with the key and saved as a file, as the CSV exports are).

import { num, t } from '../i18n.js';
import { el, setText } from './dom.js';
import { clock } from './format.js';
import { save } from './orders.js';
import { api, errorMessage, wrongKey } from './session.js';
import { msg, msgText, st } from './state.js';

// pollMs: the writer stores records every 100 ms and signs a checkpoint every second; the panel reads the
// log this often.
const pollMs = 2000;

const enc = encodeURIComponent;

// lg is what the panel shows: the screening it was read for, the latest answer and when it came, the
// panel's message, a request on its way.
const lg = {
  for: '',
  view: null, // the route's answer, or null before the first
  gotAtMs: 0, // this page's clock when it came
  askedAtMs: 0,
  state: 'idle', // idle | loading | ok | failed
  seq: 0,
  message: null,
  exportBusy: false,
};

// follow is called after each redraw of the console (every frame of the stream) with the selected
// screening: another screening reads its log at once; the same, every pollMs.
export function follow(s) {
  const id = s ? s.id : '';
  if (id !== lg.for) {
    lg.for = id;
    lg.view = null;
    lg.message = null;
    lg.state = 'idle';
    if (id) load();
    else renderLog();
    return;
  }
  if (id && Date.now() - lg.askedAtMs >= pollMs) load();
  else renderLog();
}

// load reads the log of the screening the panel follows.
async function load() {
  const id = lg.for;
  const seq = ++lg.seq;
  lg.askedAtMs = Date.now();
  if (!lg.view) lg.state = 'loading';
  renderLog();
  const r = await api('GET', `/api/admin/screenings/${enc(id)}/log`, undefined, { own404: true });
  if (seq !== lg.seq || id !== lg.for) return;
  if (r.ok && r.data && typeof r.data === 'object') {
    lg.view = r.data;
    lg.gotAtMs = Date.now();
    lg.state = 'ok';
  } else if (r.status !== 401) {
    lg.state = 'failed';
    lg.message = r.status === 0 ? msg('bad', 'admin.networkError') : errorMessage(r);
  }
  renderLog();
}

// command is the verify-log command line of the log, on the origin this page came from.
function command(v) {
  return `waitroom verify-log ${location.origin}${v.log_path}`;
}

// copyCommand puts the command on the clipboard, or selects it for the operator to copy.
export async function copyCommand() {
  el.logCommand.select();
  try {
    await navigator.clipboard.writeText(el.logCommand.value);
    lg.message = msg('ok', 'admin.log.copied');
  } catch (_) {
    lg.message = msg('warn', 'admin.log.copyByHand');
  }
  renderLog();
}

// exportLog saves the whole log, as of its latest checkpoint, as a .tar.gz file.
export async function exportLog() {
  const v = lg.view;
  const id = lg.for;
  if (!v || !v.kept || lg.exportBusy || !st.key) return;
  lg.exportBusy = true;
  lg.message = msg('', 'admin.orders.exporting');
  renderLog();
  try {
    const res = await fetch(v.export_path, { headers: { Authorization: 'Bearer ' + st.key }, cache: 'no-store' });
    if (res.status === 401) {
      lg.exportBusy = false;
      wrongKey(true);
      return;
    }
    if (!res.ok) {
      const body = await res.json().catch(() => null);
      const err = (body && body.error) || {};
      lg.message = errorMessage({ message: String(err.message || t('admin.failed', { status: res.status })), code: String(err.code || '') });
    } else {
      const named = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') || '');
      const file = named ? named[1] : `waitroom-log-${id}.tar.gz`;
      save(await res.blob(), file);
      lg.message = msg('ok', 'admin.orders.exported', { file });
    }
  } catch (_) {
    lg.message = msg('bad', 'admin.networkError');
  }
  lg.exportBusy = false;
  renderLog();
}

// signedText says when the latest checkpoint was signed: its age now (the server's count when it answered,
// plus the time since by this page's clock) and its time of day.
function signedText(v) {
  if (!v.checkpoint_size) return t('admin.log.none');
  if (v.checkpoint_age_ms == null || !v.checkpoint_at) return t('admin.log.unknownTime');
  const ageS = Math.max(0, Math.round((v.checkpoint_age_ms + Date.now() - lg.gotAtMs) / 1000));
  return t('admin.log.ago', { s: num(ageS), time: clock(Date.parse(v.checkpoint_at)) });
}

// renderLog draws the panel.
export function renderLog() {
  const v = lg.view;
  const kept = Boolean(v && v.kept);
  el.log.dataset.kept = v ? String(kept) : '';
  el.logBody.hidden = !kept;
  let state = '';
  if (lg.state === 'loading') state = t('admin.log.loading');
  else if (v && !kept) state = t('admin.log.off');
  else if (kept && !v.size && !v.backlog) state = t('admin.log.empty');
  el.logState.dataset.state = v ? (kept ? 'kept' : 'off') : lg.state;
  setText(el.logState, state);
  el.logState.hidden = state === '';
  if (kept) {
    el.logSize.dataset.value = String(v.size);
    setText(el.logSize, num(v.size));
    el.logCheckpoint.dataset.value = String(v.checkpoint_size);
    setText(el.logCheckpoint, v.checkpoint_size ? t('admin.log.records', { n: num(v.checkpoint_size) }) : t('admin.log.none'));
    el.logSigned.dataset.value = v.checkpoint_at || '';
    setText(el.logSigned, signedText(v));
    el.logBacklog.dataset.value = String(v.backlog);
    setText(el.logBacklog, num(v.backlog));
    if (el.logLink.getAttribute('href') !== v.checkpoint_path) el.logLink.setAttribute('href', v.checkpoint_path);
    const cmd = command(v);
    if (el.logCommand.value !== cmd) el.logCommand.value = cmd;
  }
  el.logExport.disabled = lg.exportBusy || !kept || !v.checkpoint_size;
  el.logCopy.disabled = !kept;
  setText(el.logMessage, msgText(lg.message));
  el.logMessage.className = 'notice' + (lg.message && lg.message.kind ? ' ' + lg.message.kind : '');
}
