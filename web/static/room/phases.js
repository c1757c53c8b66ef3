// phases.js: the moves between the page's views that the protocol, the booking and the buttons share: into a
// phase (with focus on its heading), to a final state (sold out, closed, ended, expired, left, spent,
// unknown), to the order made, back into the line, and out of it, asked first.

import { t, ordinal } from '../i18n.js';
import { announce } from './announce.js';
import { el } from './dom.js';
import { enterOrConnect } from './entry.js';
import { render } from './render.js';
import { finalKey, siteWide } from './site.js';
import { dropSocket, sayLeaving, setConn, stop } from './socket.js';
import { save, st, store } from './state.js';

// setPhase shows phase p; arriving at the seat map moves focus to its heading.
export function setPhase(p) {
  const was = st.phase;
  st.phase = p;
  render();
  if (was !== p && p === 'admitted') focusHeading(siteWide() ? el.siteInHeading : el.admittedHeading);
}

// focusHeading moves focus to the heading of a new view, so keyboard and screen-reader users start there.
export function focusHeading(h) {
  requestAnimationFrame(() => h.focus({ preventScroll: false }));
}

// finish moves to a final state; no reconnects follow until the user asks for them.
export function finish(kind) {
  stop();
  st.phase = 'final';
  st.finalKind = kind;
  st.busy = false;
  delete store.pass;
  delete store.expiresAtMs;
  if (kind !== 'expired') {
    // Expired keeps its token: joining again puts the same token at the end of the line.
    delete store.token;
    delete store.startRank;
  }
  if (kind === 'left' || kind === 'sold_out' || kind === 'closed' || kind === 'ended') store.ended = kind;
  save();
  if (kind !== 'left') dropSocket(); // a leaving socket is closed by the server once it has left
  setConn('closed');
  render();
  focusHeading(el.finalHeading);
  announce(t(finalKey(kind, 'h')) + '. ' + t(finalKey(kind, 'p')));
}

// showConfirmed shows the booking in store.reservation; the socket is no longer needed.
export function showConfirmed() {
  stop();
  dropSocket();
  st.phase = 'confirmed';
  st.conn = 'closed';
  render();
  focusHeading(el.confirmedHeading);
}

// rejoin joins the line again after a final state or a booking: fresh with a new token, else with the
// kept one (after an expired turn, which puts it at the end of the line).
export function rejoin(fresh) {
  if (fresh) {
    delete store.token;
    delete store.startRank;
  }
  delete store.reservation;
  delete store.pass;
  delete store.expiresAtMs;
  delete store.ended;
  save();
  st.note = '';
  st.message = null;
  st.paused = false;
  st.allHeld = false;
  st.allHeldHeard = false;
  st.etaSeconds = null;
  st.seatChanges = null;
  st.selected.clear();
  st.seats = null;
  st.seatsState = 'idle';
  st.phase = 'connecting';
  enterOrConnect(); // a fresh token is a new place, which may have to pass the entry
}

// leave gives the place up. The server answers {"type":"leave"} by closing the socket.
export function leave() {
  sayLeaving();
  finish('left');
}

// askLeave asks before giving the place up, in a modal dialog that starts on "Stay in line" (Escape stays
// too); the browser puts focus back on the button that asked when the dialog closes.
export function askLeave() {
  if (st.phase !== 'waiting' && st.phase !== 'prequeue') return;
  el.leaveText.textContent = st.phase === 'waiting' && st.rank
    ? t('leaveText', { rank: ordinal(st.rank) })
    : t('leaveTextPre');
  if (typeof el.leaveDialog.showModal !== 'function') {
    // A browser without <dialog>: its own confirm says the same.
    if (window.confirm(t('leaveTitle') + '\n' + el.leaveText.textContent)) leave();
    return;
  }
  if (!el.leaveDialog.open) el.leaveDialog.showModal();
}

// closeLeave closes the question, leaving the line when the answer was yes.
export function closeLeave(yes) {
  if (el.leaveDialog.open) el.leaveDialog.close();
  if (yes && (st.phase === 'waiting' || st.phase === 'prequeue')) leave();
}
