// main.js: the waiting room of one screening (/s/{id}): wires the page's events to the modules that handle
// them, and starts the page: from a finished booking, from a refresh while admitted, or by joining the line.
//
// The room's modules, each with one job (its first lines say more):
//   state.js     what the page knows, and what this browser keeps in localStorage "waitroom:room:{id}", so a
//                refresh or a second tab keeps the place
//   socket.js    the WebSocket to /ws/screenings/{id}?auth=message, the token in its hello, and its reconnects
//   entry.js     what a new place may need first: an access code, a proof of work (pow.js: the widget,
//                loaded only when a screening asks for one)
//   protocol.js  what each message of the server (docs/protocol.md) does to the page
//   booking.js   the screening, the seats, the choice of seats, the reservation and its order, over HTTP
//   waitlist.js  a sold-out sale's waitlist: the place on it, stay or leave, the party size waited for
//   notify.js    the e-mail notice of the turn, while waiting in the line or on the waitlist
//   claim.js     the link of that e-mail (?claim=): the place's token fetched, then connected with
//   gate.js      the way back to a site behind the gate (?to=PATH): the pass posted to the gate's enter URL
//   site.js      a site-wide room (no seats) and a room behind the gate: the site named, no seat map
//   phases.js    the moves between views: a final state, a turn's end, the order made, joining again,
//                leaving (asked)
//   render.js    drawing the page from the state; seatmap.js the seat map; announce.js what screen readers hear
//   dom.js       the page's elements
// Server data reaches the page through textContent only.

import { t, onChange } from '../i18n.js';
import { announce } from './announce.js';
import { loadInfo, loadSeats, refreshOrder, reserve, reserveBest, toggleSeat } from './booking.js';
import { claimFromURL, claimPlace } from './claim.js';
import { el } from './dom.js';
import { enterOrConnect, entryHello, renderEntry, retrySolve, submitCode } from './entry.js';
import { backToSite, enterSite } from './gate.js';
import { subscribe, unsubscribe } from './notify.js';
import { askLeave, checkTurnEnd, closeLeave, finish, keepsToken, rejoin, setPhase, showConfirmed } from './phases.js';
import { handle } from './protocol.js';
import { lowTimeMs, render, renderConn, renderCountdown, renderHoldTimer, renderTimer } from './render.js';
import { onSeatKey, updateSeatButtons, updateSeatmapScroll, watchSeatmapScroll } from './seatmap.js';
import { addToHello, connect, isStopped, offline, onMessage, online, pageHidden, pageShown, reconnectNow, restart } from './socket.js';
import { siteWide } from './site.js';
import { readStore, screening, serverNow, setStore, st, store, storeKey } from './state.js';
import { saveParty, stay } from './waitlist.js';

// tickMs drives the countdowns on screen.
const tickMs = 500;
// expiryGraceMs: past the end of a hold, how long before the page asks the server about it (the estimate
// of the server clock may be off by that much).
const expiryGraceMs = 250;
// holdCheckMs: past the end of a hold, how often the page asks the server how the order stands, until it
// is no longer held (the server expires holds on its own schedule, a little after hold_expires_at).
const holdCheckMs = 5000;

// --- Wiring ----------------------------------------------------------------------------------------------

// Each message of the server goes to protocol.js; a connect for a new place carries the entry's code and
// solution.
onMessage(handle);
addToHello(entryHello);

el.seatmap.addEventListener('click', (e) => {
  const b = e.target.closest && e.target.closest('button[data-seat]');
  if (b && !b.disabled) toggleSeat(b.dataset.seat);
});
el.seatmap.addEventListener('keydown', onSeatKey);
watchSeatmapScroll();
el.seatmap.addEventListener('focusin', (e) => {
  const b = e.target.closest && e.target.closest('button[data-seat]');
  if (b && st.focusSeat !== b.dataset.seat) {
    st.focusSeat = b.dataset.seat;
    updateSeatButtons();
  }
});
el.reserve.addEventListener('click', reserve);
el.best.addEventListener('submit', (e) => {
  e.preventDefault();
  reserveBest(Number(el.bestCount.value));
});
el.leave.addEventListener('click', askLeave);
el.leavePre.addEventListener('click', askLeave);
el.waitlistLeave.addEventListener('click', askLeave);
el.waitlistStay.addEventListener('click', stay);
el.partyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  saveParty();
});
el.notifyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  subscribe();
});
el.notifyStop.addEventListener('click', unsubscribe);
el.leaveStay.addEventListener('click', () => closeLeave(false));
el.leaveConfirm.addEventListener('click', () => closeLeave(true));
el.rejoin.addEventListener('click', () => rejoin(!keepsToken(st.finalKind)));
el.bookAgain.addEventListener('click', () => rejoin(true));
el.retryNow.addEventListener('click', reconnectNow);
el.codeForm.addEventListener('submit', (e) => {
  e.preventDefault();
  submitCode();
});
el.powRetry.addEventListener('click', retrySolve);
el.siteContinue.addEventListener('click', enterSite);

window.addEventListener('online', online);
window.addEventListener('offline', offline);
window.addEventListener('pageshow', pageShown);
window.addEventListener('pagehide', pageHidden);
// Back from the checkout in another tab: the order may be paid for by now.
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && heldOrder()) refreshOrder();
});

function heldOrder() {
  return st.phase === 'confirmed' && store.reservation && store.reservation.status === 'held';
}

// Another tab of the same screening: a booking made there, a leave, or a new token.
window.addEventListener('storage', (e) => {
  if (e.key !== storeKey) return;
  const next = readStore();
  if (next.reservation && st.phase !== 'confirmed') {
    setStore(next);
    showConfirmed();
  } else if (next.ended && !store.ended && ['waiting', 'prequeue', 'waitlist', 'admitted'].includes(st.phase)) {
    setStore(next);
    finish(next.ended);
  } else if (next.token && next.token !== store.token && (!isStopped() || st.phase === 'entry')) {
    // Another tab got a place: this one shares it, with no entry of its own.
    setStore(next);
    if (st.phase === 'entry') {
      st.phase = 'connecting';
      restart();
    } else {
      connect();
    }
  }
});

onChange(() => {
  render();
  renderEntry();
  updateSeatButtons();
  updateSeatmapScroll();
  el.seatmap.setAttribute('aria-label', t('seatMap'));
});

let lastHoldCheckMs = 0; // when the page last asked how a held order past its hold stands

setInterval(() => {
  if (st.phase === 'admitted') {
    const leftMs = (store.expiresAtMs || 0) - serverNow();
    if (leftMs < lowTimeMs && leftMs > 0 && !st.warnedLow) {
      st.warnedLow = true;
      announce(t(siteWide() ? 'site.oneMinute' : 'announce.oneMinute'));
    }
    if (checkTurnEnd()) return;
    renderTimer();
  }
  if (st.phase === 'prequeue') renderCountdown();
  if (st.conn === 'reconnecting') renderConn();
  if (heldOrder()) {
    renderHoldTimer();
    const pastMs = serverNow() - (store.reservation.holdExpiresAtMs || Infinity);
    if (pastMs > expiryGraceMs && Date.now() - lastHoldCheckMs > holdCheckMs) {
      lastHoldCheckMs = Date.now();
      refreshOrder();
    }
  }
}, tickMs);

// --- Start -----------------------------------------------------------------------------------------------

render();
if (!screening) {
  finish('unknown');
} else {
  const info = loadInfo();
  const claim = claimFromURL();
  if (claim) {
    // The link of a turn's e-mail: its place, whatever this browser kept before.
    claimPlace(claim);
  } else if (store.reservation) {
    showConfirmed();
    if (store.reservation.status === 'held') refreshOrder();
  } else if (store.token) {
    if (store.pass && (store.expiresAtMs || 0) > Date.now()) {
      // A refresh while admitted: show the seat map at once; the socket hands the pass over again.
      const toSite = backToSite();
      setPhase('admitted');
      Promise.all([toSite, info]).then(([sent]) => { if (!sent && !siteWide()) loadSeats(); });
    }
    connect(); // a token with its place needs no entry; the server says so if it has lost it
  } else {
    // A new place: the screening says first whether it asks for a code or a proof of work.
    info.then(() => { if (st.phase === 'connecting') enterOrConnect(); });
  }
}
