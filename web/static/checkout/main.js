// main.js: the server's own demo checkout (/checkout/{code}), used when booking.checkout_url is empty: the
// held order of the code in the address with a countdown to its hold_expires_at, "Pay" (POST
// /api/orders/{code}/pay, which confirms it at once; then the ticket page) and "Cancel" (POST
// /api/orders/{code}/cancel, after a confirmation), with what each refusal of the server means for the buyer.
// No money is taken: the page says so at the top.
// Server data reaches the page through textContent and attributes only.

import { clockTime, countdown, onChange, t } from '../i18n.js';
import { call, codeFromPath, seatsOf, serverNow, setText, statuses, ticketPath, when } from '../lib/order.js';

// tickMs redraws the countdown; lowMs is when it turns urgent and is announced.
const tickMs = 250;
const lowMs = 60000;
// expiryGraceMs: the order is read again this long after the hold ran out on the page's clock, when the
// server has had time to expire it.
const expiryGraceMs = 1500;

const $ = (sel) => document.querySelector(sel);
const el = {
  main: $('#main'),
  loading: $('#loading'),
  problem: $('#view-problem'),
  problemHeading: $('#problem-heading'),
  problemText: $('#problem-text'),
  retry: $('#retry'),
  order: $('#view-order'),
  badge: $('#status-badge'),
  heading: $('#order-heading'),
  starts: $('#order-starts'),
  seats: $('#seats'),
  code: $('#f-code'),
  rowHold: $('#row-hold'),
  hold: $('#f-hold'),
  timerBox: $('#timer-box'),
  countdown: $('#countdown'),
  message: $('#message'),
  actions: $('#pay-actions'),
  pay: $('#pay'),
  cancel: $('#cancel'),
  after: $('#after'),
  ticketLink: $('#ticket-link'),
  rejoinLink: $('#rejoin-link'),
  dialog: $('#cancel-dialog'),
  dialogText: $('#cancel-text'),
  dialogKeep: $('#cancel-keep'),
  dialogConfirm: $('#cancel-confirm'),
  live: $('#announcer'),
};

const code = codeFromPath();
const st = {
  view: 'loading', // loading | problem | order
  problem: '', // unknown | bad_code | network | failed
  order: null,
  busy: '', // '' | pay | cancel
  message: null, // {kind, key, vars, code}
  lowAnnounced: false,
  expiryRead: false, // the order was read again after its hold ran out on this clock
};

// A message: a key of i18n.js and its values, translated when drawn so a change of language applies.
const msg = (kind, key, vars, errCode) => ({ kind, key, vars, code: errCode || '' });

async function load() {
  const r = await call('GET', code);
  if (r.order) {
    st.order = r.order;
    st.view = 'order';
    if (!st.message || st.message.key === 'checkout.timeUp') st.message = messageFor(r.order);
  } else if (!st.order) {
    st.view = 'problem';
    st.problem = r.status === 404 ? 'unknown' : r.status === 400 ? 'bad_code' : r.status === 0 ? 'network' : 'failed';
  }
  render();
  if (st.view === 'problem') el.problemHeading.focus();
}

// messageFor says why an order that is not held cannot be paid here; null for a held one.
function messageFor(o) {
  switch (o.status) {
    case 'held': return null;
    case 'confirmed': return msg('ok', 'checkout.paid');
    case 'cancelled': return msg('warn', 'checkout.wasCancelled', { time: when(o.ended_at) });
    case 'expired': return msg('bad', 'checkout.wasExpired', { time: when(o.ended_at || o.hold_expires_at) });
    default: return msg('warn', 'ticket.say.unknown', { status: String(o.status) });
  }
}

// leftMs is how long the hold has left on the server's clock; NaN without one.
const leftMs = (o) => Date.parse(o.hold_expires_at || '') - serverNow();

// pay confirms the held order; the buyer then sees the ticket.
async function pay() {
  if (st.busy || !payable()) return;
  st.busy = 'pay';
  st.message = msg('', 'checkout.paying');
  render();
  const r = await call('POST', code, 'pay');
  st.busy = '';
  if (r.order && r.order.status === 'confirmed') {
    st.order = r.order;
    st.message = msg('ok', 'checkout.paidGoing');
    render();
    location.assign(r.order.ticket_url && r.order.ticket_url.startsWith('/') ? r.order.ticket_url : ticketPath(code));
    return;
  }
  refused(r, 'pay');
}

// askCancel asks first: a cancelled order cannot be taken back, and its seats go back on sale at once.
function askCancel() {
  if (st.busy || !payable()) return;
  el.dialogText.textContent = t('checkout.cancelText', { seats: seatsOf(st.order).join(', ') });
  el.dialog.showModal();
  el.dialogKeep.focus();
}

async function cancel() {
  if (st.busy || !payable()) return;
  st.busy = 'cancel';
  st.message = msg('', 'checkout.cancelling');
  render();
  const r = await call('POST', code, 'cancel');
  st.busy = '';
  if (r.order) {
    st.order = r.order;
    st.message = msg('ok', 'checkout.cancelled');
    render();
    el.live.textContent = t('checkout.cancelled');
    return;
  }
  refused(r, 'cancel');
}

// refused shows what a refusal of pay or cancel means, and reads the order again when its status moved.
function refused(r, what) {
  switch (r.code) {
    case 'HOLD_EXPIRED':
      st.message = msg('bad', 'checkout.err.expired', null, r.code);
      break;
    case 'ORDER_CANCELLED':
      st.message = msg('bad', 'checkout.err.cancelled', null, r.code);
      break;
    case 'ORDER_CONFIRMED':
      st.message = msg('ok', 'checkout.err.confirmed', null, r.code);
      break;
    case 'ORDER_NOT_FOUND':
      st.message = msg('bad', 'ticket.problem.unknown.p', null, r.code);
      break;
    default:
      if (r.status === 0) st.message = msg('bad', 'networkError');
      else if (r.status === 404 && what === 'pay') st.message = msg('bad', 'checkout.err.off', null, 'NOT_FOUND');
      else st.message = msg('bad', 'checkout.err.other', { msg: r.message || String(r.status), code: r.code }, r.code);
  }
  render();
  if (['HOLD_EXPIRED', 'ORDER_CANCELLED', 'ORDER_CONFIRMED'].includes(r.code)) load();
}

// payable: the order is held and its hold has not run out on this page's reckoning.
function payable() {
  const o = st.order;
  if (!o || o.status !== 'held') return false;
  const left = leftMs(o);
  return !(left <= 0);
}

const statusOf = (o) => (statuses.includes(o.status) ? o.status : 'unknown');

function render() {
  el.main.dataset.status = st.view === 'order' ? statusOf(st.order) : st.view;
  el.loading.hidden = st.view !== 'loading';
  el.problem.hidden = st.view !== 'problem';
  el.order.hidden = st.view !== 'order';
  if (st.view === 'problem') {
    const p = st.problem;
    el.problem.dataset.kind = p === 'unknown' || p === 'bad_code' ? 'unknown' : p;
    setText(el.problemHeading, t('ticket.problem.' + p + '.h'));
    setText(el.problemText, t('ticket.problem.' + p + '.p'));
    el.retry.hidden = p === 'unknown' || p === 'bad_code';
  }
  if (st.view === 'order') renderOrder(st.order);
}

function renderOrder(o) {
  const s = statusOf(o);
  const name = String(o.screening_name || o.screening || '');
  el.order.dataset.status = s;
  el.badge.className = 'badge order-' + s;
  el.badge.dataset.status = s;
  setText(el.badge, t('ticket.status.' + s));
  setText(el.heading, name);
  setText(el.starts, o.starts_at ? t('ticket.starts', { time: when(o.starts_at, 'long') }) : '');
  const seats = seatsOf(o);
  if (el.seats.dataset.list !== seats.join(' ')) {
    el.seats.dataset.list = seats.join(' ');
    el.seats.replaceChildren(...seats.map((id) => {
      const li = document.createElement('li');
      li.textContent = id;
      return li;
    }));
  }
  setText(el.code, String(o.code));
  const hold = clockTime(o.hold_expires_at); // as the room says it: the time of day, to the second
  el.rowHold.hidden = hold === '' || s !== 'held';
  setText(el.hold, hold);

  const held = s === 'held';
  el.timerBox.hidden = !held;
  el.actions.hidden = !held;
  el.pay.disabled = Boolean(st.busy) || !payable();
  el.cancel.disabled = Boolean(st.busy) || !payable();
  el.pay.setAttribute('aria-busy', st.busy === 'pay' ? 'true' : 'false');
  el.cancel.setAttribute('aria-busy', st.busy === 'cancel' ? 'true' : 'false');
  setText(el.pay, t(st.busy === 'pay' ? 'checkout.paying' : 'checkout.pay'));
  renderCountdown();

  el.after.hidden = held;
  el.ticketLink.hidden = s !== 'confirmed';
  el.ticketLink.href = ticketPath(o.code);
  el.rejoinLink.hidden = s === 'confirmed' || !o.screening;
  el.rejoinLink.href = '/s/' + encodeURIComponent(String(o.screening || ''));

  const m = st.message;
  el.message.className = 'notice' + (m && m.kind ? ' ' + m.kind : '');
  el.message.dataset.code = m ? m.code : '';
  setText(el.message, m ? t(m.key, m.vars) : '');
  document.title = t('checkout.docTitle', { name }) + ' · waitroom';
}

// renderCountdown draws the time the hold has left; at zero it stops the buttons and reads the order again.
function renderCountdown() {
  const o = st.order;
  if (!o || o.status !== 'held') return;
  const left = leftMs(o);
  if (!Number.isFinite(left)) {
    setText(el.countdown, '--:--');
    return;
  }
  setText(el.countdown, countdown(left));
  el.countdown.dateTime = o.hold_expires_at;
  el.timerBox.classList.toggle('low', left <= lowMs);
  if (left <= lowMs && left > 0 && !st.lowAnnounced) {
    st.lowAnnounced = true;
    el.live.textContent = t('checkout.oneMinute');
  }
  if (left <= 0) {
    el.pay.disabled = true;
    el.cancel.disabled = true;
    if (!st.message || st.message.key !== 'checkout.timeUp') {
      st.message = msg('bad', 'checkout.timeUp', null, 'HOLD_EXPIRED');
      setText(el.message, t('checkout.timeUp'));
      el.message.className = 'notice bad';
      el.message.dataset.code = 'HOLD_EXPIRED';
    }
    if (!st.expiryRead && left <= -expiryGraceMs) {
      st.expiryRead = true;
      load();
    }
  }
}

el.pay.addEventListener('click', pay);
el.cancel.addEventListener('click', askCancel);
el.dialogKeep.addEventListener('click', () => el.dialog.close());
el.dialogConfirm.addEventListener('click', () => {
  el.dialog.close();
  cancel();
});
el.dialog.addEventListener('close', () => {
  if (!el.cancel.hidden && !el.cancel.disabled) el.cancel.focus();
  else el.heading.focus();
});
el.retry.addEventListener('click', () => {
  st.view = 'loading';
  render();
  load();
});
onChange(render);
setInterval(renderCountdown, tickMs);

if (code) {
  load();
} else {
  st.view = 'problem';
  st.problem = 'bad_code';
  render();
}
