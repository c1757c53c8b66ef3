// actions.js: what the operator does to the selected screening: choose it (kept in the URL's hash), pause,
// resume, close or reset its sale (close and reset after a confirmation dialog), archive it (off the public
// list) or unarchive it, and change its pace, its checkout mode
// (instant, or hold until paid), its mode at the gate in front of a site and the cost of its proof of work
// in the admission form.

import { t, num } from '../i18n.js';
import { el } from './dom.js';
import { checkoutOf, count } from './format.js';
import { render } from './render.js';
import { api, errorMessage, handled } from './session.js';
import { merge, msg, selectedScreening, serverMsg, st } from './state.js';

// A Go duration as time.ParseDuration reads it (the server checks it is positive).
const durationPattern = /^(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))*$/;
const enc = encodeURIComponent;

// select makes id the screening watched and controlled, and names it in the URL. The messages about what was
// done before go: they were about the screening then selected (the form's "Created …, now selected" too).
export function select(id) {
  if (st.selected === id) return;
  st.selected = id;
  st.actionMessage = null;
  st.admissionMessage = null;
  st.createMessage = null;
  try {
    history.replaceState(null, '', '#' + enc(id));
  } catch (_) { /* a page without history: the choice lasts this page */ }
  render();
}

// act sends pause, resume, close, reset, archive or unarchive for the selected screening (body: reset's).
export async function act(what, body) {
  const s = selectedScreening();
  if (!s || st.busy) return;
  st.busy = true;
  st.actionMessage = msg('', 'admin.sending');
  render();
  const r = await api('POST', `/api/admin/screenings/${enc(s.id)}/${what}`, body);
  st.busy = false;
  if (r.ok && r.data && what === 'reset') {
    // A reset answers what it deleted beside the screening as it is now.
    if (r.data.screening) merge(r.data.screening);
    st.actionMessage = msg('ok', 'admin.done.reset', { id: s.id, orders: num(count(r.data.orders_deleted)) });
  } else if (r.ok && r.data) {
    merge(r.data);
    st.actionMessage = msg('ok', 'admin.done.' + what, { id: s.id });
    st.createMessage = null; // the latest result is this one; "Created …" is old news
  } else if (!handled(r)) {
    st.actionMessage = errorMessage(r);
  } else {
    st.actionMessage = null;
  }
  render();
}

// askClose asks for a confirmation before closing the sale, which cannot be undone.
export function askClose() {
  const s = selectedScreening();
  if (!s || st.busy) return;
  el.dialogText.textContent = t('admin.closeText', { name: String(s.name || s.id), id: s.id });
  el.dialog.dataset.screening = s.id;
  el.dialog.showModal();
  el.dialogCancel.focus();
}

// askReset asks for a confirmation before resetting the sale; deleting live orders is a choice of its own
// (unticked, a sale with orders is refused: SALE_HAS_ORDERS).
export function askReset() {
  const s = selectedScreening();
  if (!s || st.busy) return;
  const orders = count(s.seats_sold) + count(s.seats_held);
  el.resetText.textContent = t('admin.resetText', { name: String(s.name || s.id), id: s.id, seats: num(orders) });
  el.resetForce.checked = false;
  el.resetDialog.dataset.screening = s.id;
  el.resetDialog.showModal();
  el.resetCancel.focus();
}

// fieldName is the label of input, for the messages about it.
export function fieldName(input) {
  const label = document.querySelector(`label[for="${input.id}"]`);
  return label ? label.textContent : input.name;
}

// readSettings reads admission fields into a body of PATCH or of a new screening. Empty fields, and with
// base those equal to it, are left out. It marks bad fields and returns {body, problems}.
export function readSettings(fields, base) {
  const body = {};
  const problems = [];
  for (const name of ['interval', 'active_ttl']) {
    const input = fields[name];
    const v = input.value.trim();
    input.removeAttribute('aria-invalid');
    if (v === '' || (base && v === String(base[name]))) continue;
    if (!durationPattern.test(v)) {
      input.setAttribute('aria-invalid', 'true');
      problems.push({ input, text: t('admin.badDuration', { field: fieldName(input) }) });
    } else {
      body[name] = v;
    }
  }
  for (const name of ['batch_size', 'max_active']) {
    const input = fields[name];
    const v = input.value.trim();
    input.removeAttribute('aria-invalid');
    if (v === '') continue;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) {
      input.setAttribute('aria-invalid', 'true');
      problems.push({ input, text: t('admin.badCount', { field: fieldName(input) }) });
    } else if (!base || n !== Number(base[name])) {
      body[name] = n;
    }
  }
  return { body, problems };
}

// readPow adds the proof of work's cost to body when the operator changed it: a whole number, 0 for none.
function readPow(body, problems) {
  const input = el.admPow;
  const v = input.value.trim();
  input.removeAttribute('aria-invalid');
  if (v === '') return;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    input.setAttribute('aria-invalid', 'true');
    problems.push({ input, text: t('admin.badPow', { field: fieldName(input) }) });
  } else if (!st.admissionBase || n !== Number(st.admissionBase.pow_cost)) {
    body.pow_cost = n;
  }
}

// saveAdmission sends the admission settings that changed (PATCH .../admission); they apply at once.
export async function saveAdmission(e) {
  e.preventDefault();
  const s = selectedScreening();
  if (!s || st.admissionBusy) return;
  const { body, problems } = readSettings(el.adm, st.admissionBase);
  const chosen = el.admCheckout.find((r) => r.checked);
  if (chosen && (!st.admissionBase || chosen.value !== st.admissionBase.checkout)) body.checkout = chosen.value;
  const gateMode = el.admGateMode.value;
  if (gateMode && (!st.admissionBase || gateMode !== st.admissionBase.gate_mode)) body.gate_mode = gateMode;
  readPow(body, problems);
  if (problems.length) {
    st.admissionMessage = serverMsg('bad', problems.map((p) => p.text).join(' '));
    render();
    problems[0].input.focus();
    return;
  }
  if (Object.keys(body).length === 0) {
    st.admissionMessage = msg('warn', 'admin.noChange');
    render();
    return;
  }
  st.admissionBusy = true;
  st.admissionMessage = msg('', 'admin.sending');
  render();
  const r = await api('PATCH', `/api/admin/screenings/${enc(s.id)}/admission`, body);
  st.admissionBusy = false;
  if (r.ok && r.data && typeof r.data === 'object') {
    const now = selectedScreening();
    // The answer is the effective settings; a server that leaves the checkout mode out of it took the one sent.
    const checkout = checkoutOf({ admission: r.data }) || body.checkout || checkoutOf(now);
    if (now && now.id === s.id) merge(Object.assign({}, now, { admission: r.data, checkout }));
    st.admissionDirty = false;
    st.admissionFor = ''; // fill the form again from the effective settings
    st.createMessage = null; // the latest result is this one; "Created …" is old news
    st.admissionMessage = msg('ok', 'admin.savedAll', {
      interval: r.data.interval, batch: num(count(r.data.batch_size)),
      max: num(count(r.data.max_active)), ttl: r.data.active_ttl,
      checkout: checkout ? t('admin.checkout.' + checkout) : '–',
      gate: r.data.gate_mode ? t('admin.gateMode.' + r.data.gate_mode + '.short') : '',
      pow: Number.isInteger(r.data.pow_cost) ? (r.data.pow_cost === 0 ? t('admin.pow.off') : num(r.data.pow_cost)) : '',
    });
  } else if (!handled(r)) {
    st.admissionMessage = errorMessage(r);
  } else {
    st.admissionMessage = null;
  }
  render();
}
