// booking.js: the HTTP side of the room: the screening's name, times and state (and an estimate of the
// server's clock from the Date header), the seats, the choice of seats (at most maxSeats: fewer for an
// offer), the reservation made with the pass (of the seats chosen, or of the best N the server finds), with
// what each refusal of the server means for the page, and the order it makes: confirmed at once, or its
// seats held until paid for; and requestJSON, the JSON request the waitlist, the e-mail notice and a claim
// share.

import { t } from '../i18n.js';
import { seatOrder } from '../lib/seats.js';
import { announce } from './announce.js';
import { el } from './dom.js';
import { endTurn, finish, showConfirmed } from './phases.js';
import { render, renderCountdown } from './render.js';
import { applySeatChanges, renderSeats, updateSeatButtons } from './seatmap.js';
import { stop } from './socket.js';
import { enc, maxSeats, readStore, save, serverNow, setStore, st, store } from './state.js';

// saleStateWaitMs bounds the look at the screening's state when the server said the sale is over without
// saying why (a server older than the reason field): past it the page says the sale has ended.
const saleStateWaitMs = 3000;

// dateSkewMinMs: the HTTP Date header tells the server's time to the second only, so an offset it shows
// is used (before any tick_at) only when larger than that uncertainty: a client clock that is clearly off.
const dateSkewMinMs = 1000;

// loadInfo fetches the screening's name, times and max_seats, and what a new place must bring (pow_cost,
// code_required: entry.js); a 404 means there is no such screening.
export async function loadInfo() {
  try {
    const sentMs = Date.now();
    const res = await fetch(`/api/screenings/${enc}`, { cache: 'no-store' });
    noteServerDate(res.headers.get('Date'), sentMs, Date.now());
    if (res.status === 404) {
      if (!store.reservation) finish('unknown');
      return;
    }
    if (!res.ok) return;
    st.info = await res.json();
    // Until the socket says otherwise, the screening's state tells whether every seat is held just now.
    if (!st.allHeldHeard && st.info && st.info.state === 'all_held') st.allHeld = true;
    render();
  } catch (_) { /* the name is a nicety; the socket says what matters */ }
}

// noteServerDate estimates the server clock from a response's Date header, for the countdown to the
// opening before any tick_at arrives. The header is truncated to the second: the middle of that second,
// against the middle of the request.
function noteServerDate(header, sentMs, receivedMs) {
  const d = Date.parse(header || '');
  if (Number.isNaN(d) || st.skewFromTick) return;
  const skew = d + 500 - (sentMs + receivedMs) / 2;
  if (Math.abs(skew) > dateSkewMinMs) {
    st.skewMs = skew;
    if (st.phase === 'prequeue') renderCountdown();
  }
}

// loadSeats fetches the seats and drops from the choice those no longer available (and says so). The
// changes the socket announced while the fetch was on its way are applied over what it brings.
export async function loadSeats() {
  st.seatsState = 'loading';
  st.seatUpdates.clear();
  render();
  let lost = [];
  try {
    const res = await fetch(`/api/screenings/${enc}/seats`, { cache: 'no-store' });
    if (!res.ok) throw new Error('status ' + res.status);
    const list = await res.json();
    if (!Array.isArray(list)) throw new Error('not a list');
    for (const s of list) {
      const newer = st.seatUpdates.get(String(s.id));
      if (newer) s.status = newer;
    }
    st.seats = list;
    st.seatsState = 'ok';
    const available = new Set(list.filter((s) => s.status === 'available').map((s) => s.id));
    for (const id of [...st.selected]) {
      if (!available.has(id)) {
        st.selected.delete(id);
        lost.push(id);
      }
    }
  } catch (_) {
    st.seatsState = 'failed';
  }
  renderSeats();
  if (lost.length) noteLost(lost.sort(seatOrder));
  render();
}

// seatsChanged applies a "seats" message to the map: the change is drawn at once, and a chosen seat that
// someone else now holds or bought leaves the choice, said politely beside the map. A request by count
// refused while every seat left was only held is asked again once a seat comes back on sale.
export function seatsChanged(changes) {
  if (!Array.isArray(changes)) return;
  const lost = applySeatChanges(changes);
  if (lost.length) noteLost(lost);
  render();
  const back = changes.some((c) => c && c.status === 'available');
  if (back && st.awaitHeld) {
    const n = st.awaitHeld.count;
    st.awaitHeld = null;
    reserveBest(n);
  }
}

function noteLost(ids) {
  st.seatChanges = { seats: ids };
  announce(t('seatsGone', { seats: ids.join(', '), n: ids.length }));
}

// toggleSeat adds an available seat to the choice or takes it out, up to maxSeats.
export function toggleSeat(id) {
  if (st.phase !== 'admitted' || st.busy) return;
  const seat = (st.seats || []).find((s) => s.id === id);
  if (!seat || seat.status !== 'available') return;
  st.seatChanges = null;
  if (st.selected.has(id)) {
    st.selected.delete(id);
    st.message = null;
  } else if (st.selected.size >= maxSeats()) {
    st.message = { kind: 'warn', text: t('maxSeats', { max: maxSeats() }) };
  } else {
    st.selected.add(id);
    st.message = null;
  }
  updateSeatButtons();
  render();
}

// reserve books the chosen seats with the pass (Authorization: Bearer).
export function reserve() {
  if (st.selected.size === 0) return;
  send({ seats: [...st.selected].sort(seatOrder) });
}

// reserveBest asks the server for the best count free seats together ({"count": N}); its promise settles
// once the answer is shown.
export function reserveBest(count) {
  const n = Math.min(maxSeats(), Math.max(1, count | 0));
  return send({ count: n });
}

async function send(ask) {
  if (st.busy || !store.pass || st.phase !== 'admitted') return;
  st.awaitHeld = null; // a new request replaces one waiting for held seats
  st.busy = true;
  st.message = null;
  st.seatChanges = null;
  render();
  let res;
  let body = {};
  try {
    res = await fetch(`/api/screenings/${enc}/reservations`, {
      method: 'POST',
      cache: 'no-store',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + store.pass },
      body: JSON.stringify(ask),
    });
    body = await res.json().catch(() => ({}));
  } catch (_) {
    st.busy = false;
    refused({ kind: 'bad', text: t('networkError') });
    return;
  }
  st.busy = false;
  if (res.status === 201) {
    keepOrder(orderFrom(body, ask.seats || []));
    return;
  }
  const err = (body && body.error) || {};
  switch (err.code) {
    case 'SEAT_TAKEN':
    case 'SEAT_LOCKED': {
      const bad = Array.isArray(err.seats) ? err.seats.map(String) : [];
      bad.forEach((s) => st.selected.delete(s));
      refused({
        kind: 'warn',
        text: t(err.code === 'SEAT_TAKEN' ? 'seatTaken' : 'seatLocked', { seats: bad.join(', '), n: bad.length || 1 }),
      });
      loadSeats();
      return;
    }
    case 'NOT_ENOUGH_SEATS':
      if (ask.count && Number(err.held) > 0) {
        // Seats are only held by people paying: wait for one to come back (a seats message) and ask again
        // then, rather than have the buyer ask again and again.
        st.awaitHeld = { count: ask.count };
        refused({ kind: 'warn', text: t('notEnoughHeld', { n: ask.count }) });
        loadSeats();
        return;
      }
      refused({ kind: 'warn', text: t('notEnoughSeats', { n: ask.count || ask.seats.length }) });
      loadSeats();
      return;
    case 'SOLD_OUT':
      // The server says SOLD_OUT for a sale closed by the operator too: the screening's state tells which.
      saleOver('');
      return;
    case 'PASS_SPENT':
      setStore(readStore()); // another tab may have booked with this turn
      if (store.reservation) showConfirmed();
      else finish('spent');
      return;
    case 'INVALID_PASS':
      endTurn();
      return;
    case 'BAD_REQUEST':
      refused({ kind: 'bad', text: t('badRequest', { msg: String(err.message || '') }) });
      return;
    default:
      refused({ kind: 'bad', text: t('serverError') });
  }
}

// requestJSON sends one request of the room's other routes (the waitlist's party size, the e-mail notice, a
// claim from an e-mail's link) with a JSON body, and reads the answer: {status, code, data}, status 0 when
// the server could not be reached. An error's code is read from {"error": {...}} (7.1), or from the body
// itself when the server puts it there.
export async function requestJSON(method, path, body) {
  let res;
  try {
    res = await fetch(path, {
      method,
      cache: 'no-store',
      headers: { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (_) {
    return { status: 0, code: '', data: null };
  }
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  let code = '';
  if (!res.ok && data && typeof data === 'object') {
    const err = data.error && typeof data.error === 'object' ? data.error : data;
    code = typeof err.code === 'string' ? err.code : '';
  }
  return { status: res.status, code, data };
}

// refused shows why a reservation failed and moves focus to the words, so focus is not lost with the
// button the page was busy on, and a keyboard user continues from there (the map follows it).
function refused(message) {
  st.message = message;
  render();
  el.message.focus({ preventScroll: false });
}

// orderFrom reads a 201's order. A server without orders answers only id, seats and created_at: that is a
// confirmed booking.
export function orderFrom(body, asked) {
  const hold = Date.parse(body.hold_expires_at);
  const status = ['held', 'confirmed', 'expired', 'cancelled'].includes(body.status) ? body.status : 'confirmed';
  return {
    id: body.id,
    code: typeof body.code === 'string' ? body.code : '',
    status,
    seats: Array.isArray(body.seats) ? body.seats.map(String) : asked,
    createdAt: body.created_at,
    holdExpiresAtMs: Number.isNaN(hold) ? 0 : hold,
    checkoutUrl: status === 'held' ? pageURL(body.checkout_url) : '',
    ticketUrl: pageURL(body.ticket_url),
  };
}

// pageURL is u when it is a web address (relative to this page, or http and https), else '': a link the
// server hands over never runs script.
function pageURL(u) {
  if (typeof u !== 'string' || u === '') return '';
  try {
    const url = new URL(u, location.href);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : '';
  } catch (_) {
    return '';
  }
}

// keepOrder keeps only the order in storage, so a refresh or another tab shows it too.
function keepOrder(order) {
  setStore({ reservation: order });
  save();
  showConfirmed();
  const seats = order.seats.join(', ');
  if (order.status === 'held') announce(t('announce.held', { seats }));
  else announce(t('confirmedHeading') + '. ' + t('confirmedSeats') + ': ' + seats);
}

let checking = false;

// refreshOrder asks the server how the held order stands (paid in the checkout's tab, cancelled, or its hold
// run out) and shows it. Past its hold, an order the server cannot tell about is shown as expired.
export async function refreshOrder() {
  const r = store.reservation;
  if (!r || !r.code || checking) return;
  checking = true;
  let next = null;
  try {
    const res = await fetch(`/api/orders/${encodeURIComponent(r.code)}`, { cache: 'no-store' });
    if (res.ok) next = orderFrom(await res.json(), r.seats);
  } catch (_) { /* said below */ }
  checking = false;
  const now = store.reservation;
  if (now !== r) return; // another booking replaced it meanwhile
  if (next) {
    if (!next.checkoutUrl && next.status === 'held') next.checkoutUrl = r.checkoutUrl;
  } else if (r.status === 'held' && r.holdExpiresAtMs && r.holdExpiresAtMs <= serverNow()) {
    next = { ...r, status: 'expired', checkoutUrl: '' };
  }
  if (!next || next.status === r.status) return;
  setStore({ reservation: next });
  save();
  render();
  if (next.status === 'confirmed') announce(t('confirmedHeading'));
  else if (next.status === 'expired') announce(t('order.expired.h'));
  else if (next.status === 'cancelled') announce(t('order.cancelled.h'));
}

// saleOver ends the page for a sale that is over: sold out (every seat sold) or closed by the operator.
// When the server did not say which (reason ''), the screening's state tells.
export async function saleOver(reason) {
  if (reason === 'sold_out' || reason === 'closed') {
    finish(reason);
    return;
  }
  stop(); // no reconnect while asking
  let kind = 'ended';
  try {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), saleStateWaitMs);
    const res = await fetch(`/api/screenings/${enc}`, { cache: 'no-store', signal: ctl.signal });
    clearTimeout(timer);
    if (res.ok) {
      const info = await res.json();
      st.info = info;
      if (info.state === 'closed' || info.closed_at) kind = 'closed';
      else if (info.state === 'sold_out' || info.seats_available === 0) kind = 'sold_out';
    }
  } catch (_) { /* the sale is over either way */ }
  if (st.phase !== 'confirmed') finish(kind);
}
