// phases.js: the moves between the page's views that the protocol, the booking and the buttons share: into a
// phase (with focus on its heading), to a final state (sold out, closed, ended, a turn or an offer run out,
// left the line or the waitlist, spent, unknown, a refused link from an e-mail), to the order made, back
// into the line, and out of the line or the waitlist, asked first.

import { t } from '../i18n.js';
import { announce } from './announce.js';
import { el } from './dom.js';
import { enterOrConnect } from './entry.js';
import { render, renderLeave } from './render.js';
import { finalKey, siteWide } from './site.js';
import { dropSocket, sayLeaving, setConn, stop } from './socket.js';
import { offerSeats, save, serverNow, st, store } from './state.js';

// expiryGraceMs: expires_at is the server's expiry to the millisecond; the grace covers the error of the
// page's estimate of the server clock, so the page ends a turn only once the server has surely ended it.
const expiryGraceMs = 250;

// The final states after which the stored token is kept: a turn or an offer that ran out (joining again puts
// the same token at the end of the line), and a link from an e-mail that was refused (the token this browser
// had before, if any, is not the link's to drop).
const tokenKept = ['expired', 'offer_expired', 'link_used', 'link_expired', 'link_unknown', 'link_error'];

// keepsToken reports whether the final state kind keeps the stored token for joining again.
export function keepsToken(kind) {
  return tokenKept.includes(kind);
}

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
  delete store.offerSeats;
  delete store.waitlist;
  delete store.waitlistLine;
  delete store.stayed;
  if (!keepsToken(kind)) {
    delete store.token;
    delete store.startRank;
    delete store.party;
    delete store.notify;
  }
  if (['left', 'waitlist_left', 'sold_out', 'closed', 'ended'].includes(kind)) store.ended = kind;
  save();
  if (!leaving(kind)) dropSocket(); // a leaving socket is closed by the server once it has left
  setConn('closed');
  render();
  focusHeading(el.finalHeading);
  announce(t(finalKey(kind, 'h')) + '. ' + t(finalKey(kind, 'p')));
}

// leaving reports whether the final state kind is the page's own leave, whose socket the server closes.
export function leaving(kind) {
  return kind === 'left' || kind === 'waitlist_left';
}

// endTurn ends a turn whose time ran out: a plain turn goes back to the line when asked, an offer's seats
// went to the next on the waitlist.
export function endTurn() {
  finish(offerSeats() ? 'offer_expired' : 'expired');
}

// checkTurnEnd ends the turn once its expiry has surely passed by the server's clock (the tick of main.js
// asks); it reports whether it did.
export function checkTurnEnd() {
  if (st.phase !== 'admitted' || st.busy) return false;
  if ((store.expiresAtMs || 0) - serverNow() > -expiryGraceMs) return false;
  endTurn();
  return true;
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
    delete store.party;
    delete store.notify;
  }
  delete store.reservation;
  delete store.pass;
  delete store.expiresAtMs;
  delete store.offerSeats;
  delete store.waitlist;
  delete store.waitlistLine;
  delete store.stayed;
  delete store.ended;
  save();
  st.note = '';
  st.message = null;
  st.partyMessage = null;
  st.notifyMessage = null;
  st.waitlistNote = '';
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

// canLeave: the page holds a place it can give up (in the line, the pre-queue or the waitlist).
export function canLeave() {
  return st.phase === 'waiting' || st.phase === 'prequeue' || st.phase === 'waitlist';
}

// leave gives the place up, in the line or on the waitlist. The server answers {"type":"leave"} by closing
// the socket.
export function leave() {
  const kind = st.phase === 'waitlist' ? 'waitlist_left' : 'left';
  sayLeaving();
  finish(kind);
}

// askLeave asks before giving the place up, in a modal dialog that starts on "Stay" (Escape stays too); the
// browser puts focus back on the button that asked when the dialog closes.
export function askLeave() {
  if (!canLeave()) return;
  renderLeave(true);
  if (typeof el.leaveDialog.showModal !== 'function') {
    // A browser without <dialog>: its own confirm says the same.
    if (window.confirm(el.leaveTitle.textContent + '\n' + el.leaveText.textContent)) leave();
    return;
  }
  if (!el.leaveDialog.open) el.leaveDialog.showModal();
}

// closeLeave closes the question, leaving the line or the waitlist when the answer was yes.
export function closeLeave(yes) {
  if (el.leaveDialog.open) el.leaveDialog.close();
  if (yes && canLeave()) leave();
}
