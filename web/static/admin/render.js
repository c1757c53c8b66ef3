// render.js: draws the control room from st: the view (checking, problem, sign-in, console), the stream's
// line, the table of all screenings, the choice of screening, the selected one's figures and buttons, the
// admission form (filled from its settings unless the operator is editing it) and the forms' messages.
// What else follows the console's redraws (the orders panel) says so with onConsoleRender.

import { t, num, dateTime } from '../i18n.js';
import { drawCharts } from './charts.js';
import { el, setText } from './dom.js';
import { checkoutOf, clock, count, stateOf } from './format.js';
import { msgText, selectedScreening, st, streamRetry } from './state.js';

const consoleListeners = [];

// onConsoleRender calls f after each redraw of the console, with the selected screening (or null).
export function onConsoleRender(f) {
  consoleListeners.push(f);
}

// render draws the page from the state; the code that changes the state calls it.
export function render() {
  const v = st.view;
  el.main.dataset.view = v;
  el.checking.hidden = v !== 'checking';
  el.problem.hidden = v !== 'problem';
  el.login.hidden = v !== 'login';
  el.console.hidden = v !== 'console';
  el.signOut.hidden = v !== 'console';
  if (v === 'problem') {
    el.problemText.dataset.kind = st.problem;
    el.problemText.textContent = msgText(st.problemMessage);
  }
  if (v === 'login') {
    el.loginError.textContent = msgText(st.loginMessage);
    el.loginSubmit.disabled = st.loginBusy;
    el.loginSubmit.textContent = st.loginBusy ? t('admin.checking') : t('admin.keySubmit');
    if (st.loginMessage) el.key.setAttribute('aria-invalid', 'true');
    else el.key.removeAttribute('aria-invalid');
  }
  if (v === 'console') renderConsole();
}

// renderStream draws the stream's line; the tick calls it alone to count down to the next reopening.
export function renderStream() {
  const s = st.stream;
  el.stream.dataset.conn = s;
  let text;
  if (s === 'open') {
    text = t('admin.stream.open', { time: clock(st.lastAtMs) });
  } else if (s === 'reconnecting') {
    text = t('admin.stream.reconnecting', { s: streamRetry.secondsLeft() });
  } else {
    text = t('admin.stream.connecting');
  }
  if (el.streamText.textContent !== text) el.streamText.textContent = text;
  el.streamError.textContent = st.streamProblem ? t('admin.stream.serverError', { msg: st.streamProblem }) : '';
}

function renderConsole() {
  renderStream();
  if (!selectedScreening() && st.screenings.length) {
    const first = st.screenings.find((s) => s.id === 'demo') || st.screenings[0];
    st.selected = first.id;
  }
  renderOverview();
  renderSelect();
  renderSelected();
  renderAdmissionForm();
  setMessage(el.admissionMessage, st.admissionMessage);
  setMessage(el.createMessage, st.createMessage);
  el.admissionSubmit.disabled = st.admissionBusy || !selectedScreening();
  el.createSubmit.disabled = st.createBusy;
  drawCharts();
  const s = selectedScreening();
  for (const f of consoleListeners) f(s);
}

function setMessage(node, m) {
  node.className = node.className.replace(/\b(ok|bad|warn)\b/g, '').trim();
  if (m && m.kind) node.classList.add(m.kind);
  const text = msgText(m);
  if (node.textContent !== text) node.textContent = text;
}

const rows = new Map(); // id -> the overview row

// renderOverview keeps one row per screening, updated in place, so focus on a row's button survives a redraw.
function renderOverview() {
  el.noScreenings.hidden = st.screenings.length > 0;
  const focusedID = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.pick : undefined;
  const ids = new Set(st.screenings.map((s) => s.id));
  for (const [id, tr] of rows) {
    if (!ids.has(id)) {
      tr.remove();
      rows.delete(id);
    }
  }
  let order = false;
  st.screenings.forEach((s, i) => {
    let tr = rows.get(s.id);
    if (!tr) {
      tr = document.createElement('tr');
      const th = document.createElement('th');
      th.scope = 'row';
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'pick';
      b.dataset.pick = s.id;
      th.append(b);
      const state = document.createElement('td');
      const badge = document.createElement('span');
      state.append(badge);
      tr.append(th, state, cell(), cell(), cell(), cell(), cell());
      rows.set(s.id, tr);
      order = true;
    }
    if (el.overviewRows.children[i] !== tr) order = true;
    const line = s.line || {};
    const state = stateOf(s);
    const [th, stateCell, waiting, active, available, held, sold] = tr.children;
    setText(th.firstChild, `${s.name || s.id} (${s.id})`);
    const badge = stateCell.firstChild;
    badge.className = 'badge ' + state;
    setText(badge, t('state.' + state));
    waiting.dataset.label = t('admin.col.waiting');
    active.dataset.label = t('admin.col.active');
    available.dataset.label = t('admin.col.available');
    held.dataset.label = t('admin.col.held');
    sold.dataset.label = t('admin.col.sold');
    setText(waiting, num(count(line.waiting) + count(line.pre_queue)));
    setText(active, num(count(line.active)));
    // A site-wide room (the gate's line in front of a site) has no seats to count.
    const wide = s.site_wide === true;
    setText(available, wide ? '–' : num(count(s.seats_available)));
    setText(held, wide ? '–' : num(count(s.seats_held)));
    setText(sold, wide ? '–' : `${num(count(s.seats_sold))} / ${num(count(s.seats_total))}`);
    if (s.id === st.selected) tr.setAttribute('aria-current', 'true');
    else tr.removeAttribute('aria-current');
  });
  if (order) {
    el.overviewRows.replaceChildren(...st.screenings.map((s) => rows.get(s.id)));
    if (focusedID !== undefined) {
      const again = el.overviewRows.querySelector(`button[data-pick="${CSS.escape(focusedID)}"]`);
      if (again) again.focus();
    }
  }
}

function cell() {
  const td = document.createElement('td');
  td.className = 'num';
  return td;
}

let selectSignature = ''; // the options last built, to rebuild them only when they change

function renderSelect() {
  const labels = st.screenings.map((s) => [s.id, `${s.name || s.id} (${s.id}) · ${t('state.' + stateOf(s))}`]);
  const sig = JSON.stringify(labels);
  if (sig !== selectSignature) {
    selectSignature = sig;
    el.select.replaceChildren(...labels.map(([id, label]) => {
      const o = document.createElement('option');
      o.value = id;
      o.textContent = label;
      return o;
    }));
  }
  if (el.select.value !== st.selected) el.select.value = st.selected;
  el.select.disabled = st.screenings.length === 0;
}

function renderSelected() {
  const s = selectedScreening();
  const line = (s && s.line) || {};
  const state = s ? stateOf(s) : '';
  setText(el.selectedHeading, s ? `${s.name || s.id} (${s.id})` : '');
  el.state.className = 'badge ' + state;
  el.state.dataset.state = state;
  setText(el.state, s ? t('state.' + state) : '');
  setText(el.seats, !s ? '' : s.site_wide === true ? t('admin.siteWide') : t('admin.seatsSold', { sold: num(count(s.seats_sold)), total: num(count(s.seats_total)) }));
  const times = [];
  if (s) {
    times.push(t('opensAt', { time: dateTime(s.sale_opens_at) }));
    times.push(t('startsAt', { time: dateTime(s.starts_at) }));
    if (s.closed_at) times.push(t('admin.closedAt', { time: dateTime(s.closed_at) }));
    if (s.archived_at) times.push(t('admin.archivedAt', { time: dateTime(s.archived_at) }));
  }
  setText(el.times, times.join(' · '));
  const a = (s && s.admission) || {};
  setText(el.current.interval, s ? String(a.interval || '–') : '–');
  setText(el.current.batch_size, s && a.batch_size !== undefined ? num(count(a.batch_size)) : '–');
  setText(el.current.max_active, s && a.max_active !== undefined ? num(count(a.max_active)) : '–');
  setText(el.current.active_ttl, s ? String(a.active_ttl || '–') : '–');
  const checkout = checkoutOf(s);
  setText(el.current.checkout, checkout ? t('admin.checkout.' + checkout) : '–');
  el.current.checkout.dataset.value = checkout;
  const gateMode = (s && a.gate_mode) || '';
  setText(el.current.gate_mode, gateMode ? t('admin.gateMode.' + gateMode + '.short') : '–');
  el.current.gate_mode.dataset.value = gateMode;
  // The proof of work's effective cost (0: off), and whether a new place needs an access code.
  const pow = s && Number.isInteger(a.pow_cost) ? a.pow_cost : null;
  setText(el.current.pow_cost, pow === null ? '–' : pow === 0 ? t('admin.pow.off') : num(pow));
  el.current.pow_cost.dataset.value = pow === null ? '' : String(pow);
  const codes = s && typeof a.codes_required === 'boolean' ? a.codes_required : null;
  setText(el.current.codes_required, codes === null ? '–' : t(codes ? 'admin.codes.required' : 'admin.codes.notRequired'));
  el.current.codes_required.dataset.value = codes === null ? '' : String(codes);
  for (const k of ['available', 'held', 'sold']) {
    const v = s ? s['seats_' + k] : undefined;
    setText(el.counts[k], v === undefined || v === null ? '–' : num(count(v)));
    el.counts[k].dataset.value = v === undefined || v === null ? '' : String(count(v));
  }
  el.current.batch_size.dataset.value = s ? String(count(a.batch_size)) : '';
  const archived = Boolean(s && s.archived_at);
  const closed = !s || state === 'closed' || archived || Boolean(s.closed_at) || Boolean(line.closed);
  el.pause.disabled = st.busy || closed || Boolean(line.paused);
  el.resume.disabled = st.busy || closed || !line.paused;
  el.close.disabled = st.busy || closed;
  el.reset.disabled = st.busy || !s || archived; // unarchive first
  el.archive.hidden = archived;
  el.unarchive.hidden = !archived;
  el.archive.disabled = st.busy || !s;
  el.unarchive.disabled = st.busy || !s;
  el.pause.setAttribute('aria-busy', st.busy ? 'true' : 'false');
  setMessage(el.actionMessage, st.actionMessage);
}

// renderAdmissionForm fills the form from the selected screening's settings when it is shown for another
// screening, or when the settings changed and the operator is not editing.
function renderAdmissionForm() {
  const s = selectedScreening();
  if (!s) return;
  const a = s.admission || {};
  const base = st.admissionBase;
  const now = {
    interval: a.interval, batch_size: a.batch_size, max_active: a.max_active, active_ttl: a.active_ttl,
    checkout: checkoutOf(s), gate_mode: a.gate_mode || '', pow_cost: a.pow_cost,
  };
  const changed = !base || Object.keys(now).some((k) => String(base[k]) !== String(now[k]));
  if (st.admissionFor === s.id && (st.admissionDirty || !changed)) return;
  st.admissionFor = s.id;
  st.admissionBase = now;
  st.admissionDirty = false;
  for (const k of Object.keys(el.adm)) {
    el.adm[k].value = a[k] === undefined || a[k] === null ? '' : String(a[k]);
    el.adm[k].removeAttribute('aria-invalid');
  }
  for (const r of el.admCheckout) r.checked = r.value === now.checkout;
  el.admGateMode.value = ''; // "(unchanged)": a mode is sent only when the operator picks one
  el.admPow.value = Number.isInteger(a.pow_cost) ? String(a.pow_cost) : '';
  el.admPow.removeAttribute('aria-invalid');
}

// forgetSelectLabels makes the next render rebuild the options of the choice of screening (their state
// names change with the language).
export function forgetSelectLabels() {
  selectSignature = '';
}
