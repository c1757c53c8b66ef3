// main.js: the buyer's ticket page (/t/{code}): the order of the code in the address, read from
// GET /api/orders/{code}, with its status in words, its screening and seats, its times, and the QR image of
// the ticket (/t/{code}/qr.png) once it is paid. A held order says it is not paid yet and links to its
// checkout, and is read again until it is paid or its hold runs out. Printable: the print style sheet in
// ticket.css leaves the ticket alone on the page, black on white, the QR code large.
// Server data reaches the page through textContent and attributes only.

import { clockTime, onChange, t } from '../i18n.js';
import { call, codeFromPath, seatsOf, setText, statuses, when } from '../lib/order.js';

// qrPath is the image of the ticket's QR code.
const qrPath = (code) => `/t/${encodeURIComponent(code)}/qr.png`;

// safeLink is href when it is a web address (or one on this server), else '': a checkout_url is the
// operator's setting, but a javascript: link is never followed.
function safeLink(href) {
  if (typeof href !== 'string' || href === '') return '';
  try {
    const u = new URL(href, location.href);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : '';
  } catch (_) {
    return '';
  }
}

// heldRefreshMs: how often a held order is read again (it may be paid in another tab, or cancelled).
const heldRefreshMs = 15000;
// expiryGraceMs: a held order is read again this long after its hold should have run out, when the
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
  ticket: $('#view-ticket'),
  badge: $('#status-badge'),
  screening: $('#ticket-screening'),
  starts: $('#ticket-starts'),
  statusText: $('#status-text'),
  pay: $('#pay'),
  payLink: $('#pay-link'),
  qrBox: $('#qr-box'),
  qr: $('#qr'),
  seats: $('#seats'),
  code: $('#f-code'),
  rowCreated: $('#row-created'),
  created: $('#f-created'),
  rowHold: $('#row-hold'),
  hold: $('#f-hold'),
  rowConfirmed: $('#row-confirmed'),
  confirmed: $('#f-confirmed'),
  rowEnded: $('#row-ended'),
  endedLabel: $('#f-ended-label'),
  ended: $('#f-ended'),
  print: $('#print'),
  live: $('#announcer'),
};

const code = codeFromPath();
const st = {
  view: 'loading', // loading | problem | ticket
  problem: '', // unknown | bad_code | network | failed
  order: null,
};
let refresh = 0; // the pending reading of a held order

// load reads the order; a change of its status after the first reading is announced.
async function load() {
  clearTimeout(refresh);
  const r = await call('GET', code);
  const before = st.order && st.order.status;
  if (r.order) {
    st.order = r.order;
    st.view = 'ticket';
  } else if (st.order && (r.status === 0 || r.status >= 500)) {
    // A reading that failed leaves the ticket as it was shown; the next one may get through.
  } else {
    st.view = 'problem';
    st.problem = r.status === 404 ? 'unknown' : r.status === 400 ? 'bad_code' : r.status === 0 ? 'network' : 'failed';
  }
  render();
  if (st.view === 'problem') el.problemHeading.focus();
  if (before && st.order && st.order.status !== before) el.live.textContent = statusText(st.order);
  if (st.order && st.order.status === 'held') {
    const leftMs = Date.parse(st.order.hold_expires_at || '') - Date.now();
    const waitMs = Number.isFinite(leftMs) && leftMs >= 0 ? Math.min(heldRefreshMs, leftMs + expiryGraceMs) : heldRefreshMs;
    refresh = setTimeout(load, waitMs);
  }
}

// statusOf is the status of order o that the page has words for.
const statusOf = (o) => (statuses.includes(o.status) ? o.status : 'unknown');

// statusText is what the status means for the buyer, in a sentence.
function statusText(o) {
  const s = statusOf(o);
  if (s === 'held') return t('ticket.say.held', { time: clockTime(o.hold_expires_at) });
  if (s === 'cancelled') return t(o.cancelled_by === 'admin' ? 'ticket.say.cancelledByAdmin' : 'ticket.say.cancelled', { time: when(o.ended_at) });
  if (s === 'expired') return t('ticket.say.expired', { time: when(o.ended_at || o.hold_expires_at) });
  if (s === 'confirmed') return t('ticket.say.confirmed');
  return t('ticket.say.unknown', { status: String(o.status) });
}

function render() {
  el.main.dataset.status = st.view === 'ticket' ? statusOf(st.order) : st.view;
  el.loading.hidden = st.view !== 'loading';
  el.problem.hidden = st.view !== 'problem';
  el.ticket.hidden = st.view !== 'ticket';
  if (st.view === 'problem') renderProblem();
  if (st.view === 'ticket') renderTicket(st.order);
}

function renderProblem() {
  const p = st.problem;
  el.problem.dataset.kind = p === 'unknown' || p === 'bad_code' ? 'unknown' : p;
  setText(el.problemHeading, t('ticket.problem.' + p + '.h'));
  setText(el.problemText, t('ticket.problem.' + p + '.p'));
  el.retry.hidden = p === 'unknown' || p === 'bad_code';
  document.title = t('ticket.problem.' + p + '.h') + ' · waitroom';
}

function renderTicket(o) {
  const s = statusOf(o);
  const name = String(o.screening_name || o.screening || '');
  el.ticket.dataset.status = s;
  el.badge.className = 'badge order-' + s;
  el.badge.dataset.status = s;
  setText(el.badge, t('ticket.status.' + s));
  setText(el.screening, name);
  setText(el.starts, o.starts_at ? t('ticket.starts', { time: when(o.starts_at, 'long') }) : '');
  setText(el.statusText, statusText(o));

  const pay = s === 'held' ? safeLink(o.checkout_url) : '';
  el.pay.hidden = pay === '';
  if (pay) el.payLink.href = pay;

  // The QR code is the ticket: shown only once it is paid, so a held or ended order has none to show.
  const paid = s === 'confirmed';
  el.qrBox.hidden = !paid;
  if (paid) {
    const src = qrPath(o.code);
    if (el.qr.getAttribute('src') !== src) el.qr.setAttribute('src', src);
    el.qr.alt = t('ticket.qrAlt', { code: o.code });
  } else if (el.qr.hasAttribute('src')) {
    el.qr.removeAttribute('src');
  }

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
  row(el.rowCreated, el.created, o.created_at);
  // A live hold's end reads as on the checkout and in the room, the time of day to the second.
  row(el.rowHold, el.hold, s === 'held' || s === 'expired' ? o.hold_expires_at : '', s === 'held' ? clockTime : when);
  row(el.rowConfirmed, el.confirmed, o.confirmed_at);
  row(el.rowEnded, el.ended, s === 'cancelled' || s === 'expired' ? o.ended_at : '');
  setText(el.endedLabel, t(s === 'expired' ? 'ticket.f.expired' : 'ticket.f.cancelled'));
  el.print.hidden = s !== 'confirmed';
  document.title = t('ticket.docTitle', { status: t('ticket.status.' + s), name }) + ' · waitroom';
}

// row shows a time in its line of the facts (written by format), or hides the line when there is none.
function row(box, dd, v, format = when) {
  const text = format(v);
  box.hidden = text === '';
  setText(dd, text);
}

el.retry.addEventListener('click', () => {
  st.view = 'loading';
  render();
  load();
});
el.print.addEventListener('click', () => window.print());
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && st.order && st.order.status === 'held') load();
});
onChange(render);

if (code) {
  load();
} else {
  st.view = 'problem';
  st.problem = 'bad_code';
  render();
}
