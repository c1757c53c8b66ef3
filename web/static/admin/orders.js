// orders.js: the box office of the selected screening: its orders, newest first, filtered by status
// (GET /api/admin/screenings/{id}/orders?status=…), read again whenever the live figures show its seats
// held or sold change; an export of the same list as CSV (?format=csv), fetched with the key and saved
// as a file, since a plain link could not send it (the codes' panel downloads its CSV the same way); and
// the operator's cancel of a held or paid order (POST /api/admin/orders/{code}/cancel) after a
// confirmation that says what it undoes.

import { clockTime, dateTime, t } from '../i18n.js';
import { sortedSeats } from '../lib/seats.js';
import { el, setText } from './dom.js';
import { api, errorMessage, wrongKey } from './session.js';
import { msg, msgText, st } from './state.js';

// minReloadMs: the live figures change every second in a busy sale; the list is read at most this often.
const minReloadMs = 1000;
// revokeAfterMs: the exported file's object URL is freed once the browser has had time to save it.
const revokeAfterMs = 30000;

const enc = encodeURIComponent;
const cancellable = ['held', 'confirmed'];
const known = ['held', 'confirmed', 'cancelled', 'expired'];

// ord is what the panel shows: the screening it was read for, its filter, the orders and the messages.
const ord = {
  for: '', // the screening id the list belongs to
  status: '', // the filter: '' (all) or one status
  orders: [],
  state: 'idle', // idle | loading | ok | failed
  figures: '', // the seats held and sold when the list was last asked for
  askedAtMs: 0,
  again: 0, // the pending reading, when the figures changed within minReloadMs
  seq: 0, // the latest reading; an older answer is dropped
  message: null,
  exportBusy: false,
  cancelBusy: '', // the code being cancelled
  asked: null, // the order the confirmation dialog is about
};

// follow is called after each redraw of the console with the selected screening: another screening, or a
// change in its seats held or sold, reads the list again.
export function follow(s) {
  if (!s) return;
  const figures = `${s.seats_held}/${s.seats_sold}/${s.seats_available}`;
  if (s.id !== ord.for) {
    ord.for = s.id;
    ord.orders = [];
    ord.message = null;
    ord.figures = figures;
    load();
    return;
  }
  if (figures === ord.figures) return;
  ord.figures = figures;
  const waitMs = ord.askedAtMs + minReloadMs - Date.now();
  clearTimeout(ord.again);
  if (waitMs > 0) ord.again = setTimeout(load, waitMs);
  else load();
}

// load reads the orders of the screening the panel follows, with its filter.
export async function load() {
  const id = ord.for;
  if (!id) return;
  clearTimeout(ord.again);
  const seq = ++ord.seq;
  ord.askedAtMs = Date.now();
  ord.state = ord.orders.length ? ord.state : 'loading';
  renderOrders();
  const q = ord.status ? '?status=' + enc(ord.status) : '';
  const r = await api('GET', `/api/admin/screenings/${enc(id)}/orders${q}`, undefined, { own404: true });
  if (seq !== ord.seq || id !== ord.for) return;
  if (r.ok && r.data && Array.isArray(r.data.orders)) {
    ord.orders = r.data.orders.filter((o) => o && typeof o.code === 'string');
    ord.state = 'ok';
  } else if (r.status !== 401) {
    ord.state = 'failed';
    ord.message = r.status === 0 ? msg('bad', 'admin.networkError') : errorMessage(r);
  }
  renderOrders();
}

// setFilter shows only the orders of one status ('' for all).
export function setFilter(status) {
  ord.status = known.includes(status) ? status : '';
  ord.orders = [];
  ord.message = null;
  load();
}

// exportCSV saves the list as the filter shows it, as CSV.
export async function exportCSV() {
  const id = ord.for;
  if (!id || ord.exportBusy || !st.key) return;
  ord.exportBusy = true;
  ord.message = msg('', 'admin.orders.exporting');
  renderOrders();
  const q = new URLSearchParams({ format: 'csv' });
  if (ord.status) q.set('status', ord.status);
  const file = `orders-${id}${ord.status ? '-' + ord.status : ''}.csv`;
  const m = await downloadCSV(`/api/admin/screenings/${enc(id)}/orders?${q}`, file);
  ord.exportBusy = false;
  if (!m) return;
  ord.message = m;
  renderOrders();
}

// downloadCSV fetches the CSV at url and saves it as file; the orders' and the codes' exports share it. The
// request carries the key, so it is a fetch whose answer is handed to the browser as a file, since a plain
// link could not send it. It resolves to the message the panel shows next (the file saved, or why not), or
// to null when the key was refused: the operator is then back at the sign-in, and the panel keeps its
// message, as nothing of it is drawn there.
export async function downloadCSV(url, file) {
  try {
    const res = await fetch(url, {
      headers: { Authorization: 'Bearer ' + st.key, Accept: 'text/csv' },
      cache: 'no-store',
    });
    if (res.status === 401) {
      wrongKey(true);
      return null;
    }
    if (!res.ok) {
      const body = await res.json().catch(() => null);
      const err = (body && body.error) || {};
      return errorMessage({ message: String(err.message || t('admin.failed', { status: res.status })), code: String(err.code || '') });
    }
    save(await res.blob(), file);
    return msg('ok', 'admin.orders.exported', { file });
  } catch (_) {
    return msg('bad', 'admin.networkError');
  }
}

// save hands blob to the browser as a download named file (the log's export too).
export function save(blob, file) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = file;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), revokeAfterMs);
}

// askCancel asks the operator to confirm the cancel of the order with code, saying what it undoes.
export function askCancel(code) {
  const o = ord.orders.find((x) => x.code === code);
  if (!o || !cancellable.includes(o.status) || ord.cancelBusy) return;
  ord.asked = o;
  const key = o.status === 'confirmed' ? 'admin.order.cancelConfirmed' : 'admin.order.cancelHeld';
  el.orderDialogText.textContent = t(key, { code: o.code, seats: seatsOf(o).join(' ') });
  el.orderDialog.dataset.code = o.code;
  el.orderDialog.showModal();
  el.orderDialogKeep.focus();
}

// cancelAsked cancels the order the operator confirmed.
export async function cancelAsked() {
  const o = ord.asked;
  ord.asked = null;
  if (!o || ord.cancelBusy) return;
  ord.cancelBusy = o.code;
  ord.message = msg('', 'admin.sending');
  renderOrders();
  const r = await api('POST', `/api/admin/orders/${enc(o.code)}/cancel`, undefined, { own404: true });
  ord.cancelBusy = '';
  const v = { code: o.code, seats: seatsOf(o).join(' ') };
  if (r.ok) {
    ord.message = msg('ok', 'admin.order.cancelDone', v);
  } else if (r.code === 'HOLD_EXPIRED') {
    ord.message = msg('warn', 'admin.order.err.expired', v);
  } else if (r.code === 'ORDER_CANCELLED') {
    ord.message = msg('warn', 'admin.order.err.cancelled', v);
  } else if (r.status !== 401) {
    ord.message = r.status === 0 ? msg('bad', 'admin.networkError') : errorMessage(r);
  }
  if (r.status !== 401) load();
  renderOrders();
}

// dialogClosed gives the focus back to the order's button, or to the list when the order is gone.
export function dialogClosed() {
  const code = el.orderDialog.dataset.code;
  const b = code ? el.ordersRows.querySelector(`button[data-cancel="${CSS.escape(code)}"]`) : null;
  if (b && !b.disabled) b.focus();
  else el.ordersHeading.focus();
}

const seatsOf = (o) => sortedSeats(o.seats); // in seat order (lib/seats.js), D9 before D10
const statusOf = (o) => (known.includes(o.status) ? o.status : 'unknown');

// renderOrders draws the panel; called when its list or messages change, and on a change of language.
export function renderOrders() {
  const s = st.screenings.find((x) => x.id === ord.for);
  const name = s ? `${s.name || s.id} (${s.id})` : '';
  setText(el.ordersHeading, s ? t('admin.orders.heading', { name }) : t('admin.orders.headingNone'));
  setText(el.ordersCaption, t('admin.orders.caption', { name }));
  if (el.ordersStatus.value !== ord.status) el.ordersStatus.value = ord.status;
  el.ordersExport.disabled = ord.exportBusy || !ord.for;
  el.ordersExport.setAttribute('aria-busy', ord.exportBusy ? 'true' : 'false');
  el.ordersRefresh.disabled = !ord.for;
  el.ordersState.dataset.state = ord.state;
  let state = '';
  if (ord.state === 'loading') state = t('admin.orders.loading');
  else if (ord.state === 'ok') state = ord.orders.length ? t('admin.orders.count', { n: ord.orders.length }) : t('admin.orders.none');
  setText(el.ordersState, state);
  const m = ord.message;
  el.ordersMessage.className = 'notice' + (m && m.kind ? ' ' + m.kind : '');
  setText(el.ordersMessage, msgText(m));

  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.cancel : undefined;
  el.ordersRows.replaceChildren(...ord.orders.map(row));
  if (focused !== undefined) {
    const again = el.ordersRows.querySelector(`button[data-cancel="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
}

// row is one order's line: its code (a link to its ticket page), status, seats, times and its cancel.
function row(o) {
  const status = statusOf(o);
  const tr = document.createElement('tr');
  tr.dataset.code = o.code;
  tr.dataset.status = status;

  const th = document.createElement('th');
  th.scope = 'row';
  const a = document.createElement('a');
  a.href = '/t/' + enc(o.code);
  a.className = 'order-code';
  a.textContent = o.code;
  th.append(a);

  const badge = document.createElement('span');
  badge.className = 'badge order-' + status;
  badge.textContent = known.includes(status) ? t('admin.order.' + status) : String(o.status);

  const whenText = [];
  if (status === 'held') whenText.push(t('admin.order.holdUntil', { time: clockTime(o.hold_expires_at) }));
  if (o.confirmed_at) whenText.push(t('admin.order.paidAt', { time: dateTime(o.confirmed_at) }));
  if (o.ended_at) whenText.push(t('admin.order.endedAt', { time: dateTime(o.ended_at) }));
  if (o.cancelled_by === 'admin') whenText.push(t('admin.order.byAdmin'));
  else if (o.cancelled_by === 'buyer') whenText.push(t('admin.order.byBuyer'));

  const action = document.createElement('td');
  if (cancellable.includes(status)) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'btn danger small';
    b.dataset.cancel = o.code;
    b.dataset.testid = 'order-cancel';
    b.textContent = t('admin.order.cancel');
    b.setAttribute('aria-label', t('admin.order.cancelLabel', { code: o.code }));
    b.disabled = ord.cancelBusy !== '';
    action.append(b);
  }

  tr.append(th,
    labelled('admin.orders.col.status', badge),
    labelled('admin.orders.col.seats', seatsOf(o).join(' ')),
    labelled('admin.orders.col.created', dateTime(o.created_at)),
    labelled('admin.orders.col.when', whenText.join(', ')),
    action);
  return tr;
}

// labelled is a cell with its column's name in data-label (shown above the value on a narrow screen).
function labelled(key, content) {
  const td = document.createElement('td');
  td.dataset.label = t(key);
  td.append(content);
  return td;
}

