// main.js: the waiting room of one screening (/s/{id}).
//
// It holds one WebSocket to /ws/screenings/{id}?token=T (docs/protocol.md) and keeps the token, the place it
// arrived at, the pass and a finished booking in localStorage under "waitroom:room:{id}", so a refresh or a
// second tab keeps the place. A lost connection is retried with exponential backoff and jitter; close code
// 1012 (server restarting) is retried soon, 1013 (try later) after a longer wait. Server data reaches the
// page through textContent only.
//
// Before the sale opens the server answers "prequeue": the page counts down to opens_at (by its estimate of
// the server clock) until the first "position" gives the place drawn at the opening. "position" may carry a
// wait estimate (eta_seconds); "paused" and "resumed" show and hide the operator's pause.

import { t, num, ordinal, onChange } from '../i18n.js';
import { announce, announceRank } from './announce.js';
import { el } from './dom.js';
import { lowTimeMs, render, renderConn, renderCountdown, renderTimer } from './render.js';
import { onSeatKey, renderSeats, seatOrder, updateSeatButtons } from './seatmap.js';
import {
  connect, dropSocket, isStopped, offline, onMessage, online, pageShown, reconnectNow, retryLater, sendIfOpen,
} from './socket.js';
import { finish, focusHeading, leave, rejoin, setPhase, showConfirmed } from './phases.js';
import { enc, maxSeats, readStore, retry, save, screening, serverNow, setStore, st, store, storeKey } from './state.js';

// tickMs drives the countdowns on screen.
const tickMs = 500;
// expiryGraceMs: expires_at is the server's expiry to the millisecond; the grace covers the error of the
// page's estimate of the server clock, so the page ends a turn only once the server has surely ended it.
const expiryGraceMs = 250;
// dateSkewMinMs: the HTTP Date header tells the server's time to the second only, so an offset it shows
// is used (before any tick_at) only when larger than that uncertainty: a client clock that is clearly off.
const dateSkewMinMs = 1000;

function handle(m) {
  // After a final state only a leaving socket is still open; what it hears no longer changes the page.
  if (isStopped() && !(m && m.type === 'error')) return;
  switch (m && m.type) {
    case 'queued': onQueued(m); break;
    case 'prequeue': onPrequeue(m); break;
    case 'position': onPosition(m); break;
    case 'paused': onPaused(true); break;
    case 'resumed': onPaused(false); break;
    case 'admitted': onAdmitted(m); break;
    case 'sold_out': finish('sold_out'); break;
    case 'error': onError(m); break;
    default: break; // a message of a later protocol version
  }
}

function onQueued(m) {
  if (typeof m.token === 'string' && m.token) store.token = m.token;
  if (store.pass) {
    // A turn was given and has lapsed: the server put this token at the end of the line.
    delete store.pass;
    delete store.expiresAtMs;
    st.note = 'backInLine';
    st.selected.clear();
  }
  if (m.inserted || !store.startRank) store.startRank = m.rank;
  delete store.ended;
  save();
  const opened = st.phase === 'prequeue';
  st.paused = m.paused === true;
  st.etaSeconds = null;
  setPhase('waiting');
  setRank(m.rank, m.total);
  if (opened) onOpened();
}

// onPrequeue: the sale has not opened; every token that arrives before it gets a random place at the
// opening, so there is no rank yet, only a countdown. The token is kept as for "queued".
function onPrequeue(m) {
  if (typeof m.token === 'string' && m.token) store.token = m.token;
  if (store.pass) {
    delete store.pass;
    delete store.expiresAtMs;
    st.selected.clear();
  }
  delete store.startRank; // the place is drawn at the opening; the first rank after it is the start
  delete store.ended;
  save();
  const opens = Date.parse(m.opens_at);
  st.opensAtMs = Number.isNaN(opens) ? 0 : opens;
  st.preTotal = Math.max(1, m.total | 0);
  st.paused = m.paused === true;
  st.etaSeconds = null;
  st.note = '';
  setPhase('prequeue');
}

// onOpened: the line opened and this page left the pre-queue for its drawn place.
function onOpened() {
  focusHeading(el.waitingHeading);
  announce(t('announce.opened', { rank: ordinal(st.rank), total: num(st.total) }));
}

function onPaused(paused) {
  if (st.paused === paused) return;
  st.paused = paused;
  if (paused) st.etaSeconds = null; // no estimate holds while nobody is admitted
  render();
  if (st.phase === 'waiting' || st.phase === 'prequeue') announce(t(paused ? 'announce.paused' : 'announce.resumed'));
}

function onPosition(m) {
  if (typeof m.tick_at === 'number' && m.tick_at > 0) {
    // The tick happened before the message arrived, so this errs towards a server clock that is behind,
    // which makes the countdown end late rather than early.
    st.skewMs = m.tick_at - Date.now();
    st.skewFromTick = true;
  }
  if (st.phase !== 'waiting' && st.phase !== 'connecting' && st.phase !== 'prequeue') return;
  const opened = st.phase === 'prequeue';
  st.etaSeconds = typeof m.eta_seconds === 'number' && Number.isFinite(m.eta_seconds) && m.eta_seconds >= 0 ? m.eta_seconds : null;
  setPhase('waiting');
  setRank(m.rank, m.total);
  if (opened) onOpened();
}

function setRank(rank, total) {
  st.rank = Math.max(1, rank | 0);
  st.total = Math.max(st.rank, total | 0);
  if (!store.startRank || st.rank > store.startRank) {
    store.startRank = st.rank;
    save();
  }
  render();
  announceRank();
}

function onAdmitted(m) {
  if (typeof m.token === 'string' && m.token) store.token = m.token;
  const expires = Date.parse(m.expires_at);
  store.pass = String(m.pass || '');
  store.expiresAtMs = Number.isNaN(expires) ? serverNow() + 5 * 60000 : expires;
  delete store.ended;
  save();
  st.note = '';
  const first = st.phase !== 'admitted';
  setPhase('admitted');
  loadSeats();
  if (first) {
    st.warnedLow = false;
    const min = Math.max(1, Math.round((store.expiresAtMs - serverNow()) / 60000));
    announce(t('announce.admitted', { min }));
  }
}

function onError(m) {
  switch (m.code) {
    case 'UNKNOWN_SCREENING':
      finish('unknown');
      break;
    case 'BAD_TOKEN':
      // The stored token is not one the server hands out: start over with a new one (the close that
      // follows reconnects without it).
      delete store.token;
      delete store.startRank;
      delete store.pass;
      delete store.expiresAtMs;
      save();
      break;
    case 'INTERNAL':
      // The pass could not be signed; the socket stays open. A reconnect with the token asks again.
      dropSocket();
      retryLater(retry.backoff());
      break;
    case 'UNAVAILABLE':
      // After a leave the socket stays open and the leave may be sent again; on connect a close
      // (1013) follows and is retried with backoff.
      if (st.phase === 'final' && st.finalKind === 'left') sendIfOpen({ type: 'leave' });
      break;
    default:
      break; // BAD_MESSAGE and codes of later versions
  }
}

// --- The booking -----------------------------------------------------------------------------------------

async function loadInfo() {
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

async function loadSeats() {
  st.seatsState = 'loading';
  render();
  try {
    const res = await fetch(`/api/screenings/${enc}/seats`, { cache: 'no-store' });
    if (!res.ok) throw new Error('status ' + res.status);
    const list = await res.json();
    if (!Array.isArray(list)) throw new Error('not a list');
    st.seats = list;
    st.seatsState = 'ok';
    const available = new Set(list.filter((s) => s.status === 'available').map((s) => s.id));
    for (const id of [...st.selected]) {
      if (!available.has(id)) st.selected.delete(id);
    }
  } catch (_) {
    st.seatsState = 'failed';
  }
  renderSeats();
  render();
}

async function reserve() {
  if (st.busy || st.selected.size === 0 || !store.pass || st.phase !== 'admitted') return;
  const seats = [...st.selected].sort(seatOrder);
  st.busy = true;
  st.message = null;
  render();
  let res;
  let body = {};
  try {
    res = await fetch(`/api/screenings/${enc}/reservations`, {
      method: 'POST',
      cache: 'no-store',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + store.pass },
      body: JSON.stringify({ seats }),
    });
    body = await res.json().catch(() => ({}));
  } catch (_) {
    st.busy = false;
    st.message = { kind: 'bad', text: t('networkError') };
    render();
    return;
  }
  st.busy = false;
  if (res.status === 201) {
    confirm({ id: body.id, seats: Array.isArray(body.seats) ? body.seats : seats, createdAt: body.created_at });
    return;
  }
  const err = (body && body.error) || {};
  switch (err.code) {
    case 'SEAT_TAKEN':
    case 'SEAT_LOCKED': {
      const bad = Array.isArray(err.seats) ? err.seats.map(String) : [];
      bad.forEach((s) => st.selected.delete(s));
      st.message = {
        kind: 'warn',
        text: t(err.code === 'SEAT_TAKEN' ? 'seatTaken' : 'seatLocked', { seats: bad.join(', '), n: bad.length || 1 }),
      };
      loadSeats();
      break;
    }
    case 'SOLD_OUT':
      finish('sold_out');
      return;
    case 'PASS_SPENT':
      setStore(readStore()); // another tab may have booked with this turn
      if (store.reservation) showConfirmed();
      else finish('spent');
      return;
    case 'INVALID_PASS':
      finish('expired');
      return;
    case 'BAD_REQUEST':
      st.message = { kind: 'bad', text: t('badRequest', { msg: String(err.message || '') }) };
      break;
    default:
      st.message = { kind: 'bad', text: t('serverError') };
  }
  render();
}

function confirm(reservation) {
  setStore({ reservation });
  save();
  showConfirmed();
  announce(t('confirmedHeading') + '. ' + t('confirmedSeats') + ': ' + reservation.seats.join(', '));
}

function toggleSeat(id) {
  if (st.phase !== 'admitted' || st.busy) return;
  const seat = (st.seats || []).find((s) => s.id === id);
  if (!seat || seat.status !== 'available') return;
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

// --- Wiring ----------------------------------------------------------------------------------------------

onMessage(handle);

el.seatmap.addEventListener('click', (e) => {
  const b = e.target.closest && e.target.closest('button[data-seat]');
  if (b && !b.disabled) toggleSeat(b.dataset.seat);
});
el.seatmap.addEventListener('keydown', onSeatKey);
el.seatmap.addEventListener('focusin', (e) => {
  const b = e.target.closest && e.target.closest('button[data-seat]');
  if (b && st.focusSeat !== b.dataset.seat) {
    st.focusSeat = b.dataset.seat;
    updateSeatButtons();
  }
});
el.reserve.addEventListener('click', reserve);
el.leave.addEventListener('click', leave);
el.leavePre.addEventListener('click', leave);
el.rejoin.addEventListener('click', () => rejoin(st.finalKind !== 'expired'));
el.bookAgain.addEventListener('click', () => rejoin(true));
el.retryNow.addEventListener('click', reconnectNow);

window.addEventListener('online', online);
window.addEventListener('offline', offline);
window.addEventListener('pageshow', pageShown);

// Another tab of the same screening: a booking made there, a leave, or a new token.
window.addEventListener('storage', (e) => {
  if (e.key !== storeKey) return;
  const next = readStore();
  if (next.reservation && st.phase !== 'confirmed') {
    setStore(next);
    showConfirmed();
  } else if (next.ended && !store.ended && (st.phase === 'waiting' || st.phase === 'prequeue' || st.phase === 'admitted')) {
    setStore(next);
    finish(next.ended);
  } else if (next.token && next.token !== store.token && !isStopped()) {
    setStore(next);
    connect();
  }
});

onChange(() => {
  render();
  updateSeatButtons();
  el.seatmap.setAttribute('aria-label', t('seatMap'));
});

setInterval(() => {
  if (st.phase === 'admitted') {
    const leftMs = (store.expiresAtMs || 0) - serverNow();
    if (leftMs < lowTimeMs && leftMs > 0 && !st.warnedLow) {
      st.warnedLow = true;
      announce(t('announce.oneMinute'));
    }
    if (leftMs <= -expiryGraceMs && !st.busy) {
      finish('expired');
      return;
    }
    renderTimer();
  }
  if (st.phase === 'prequeue') renderCountdown();
  if (st.conn === 'reconnecting') renderConn();
}, tickMs);

// --- Start -----------------------------------------------------------------------------------------------

render();
if (!screening) {
  finish('unknown');
} else {
  loadInfo();
  if (store.reservation) {
    showConfirmed();
  } else {
    if (store.pass && (store.expiresAtMs || 0) > Date.now()) {
      // A refresh while admitted: show the seat map at once; the socket hands the pass over again.
      setPhase('admitted');
      loadSeats();
    }
    connect();
  }
}
