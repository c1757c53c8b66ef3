// phases.js: the moves between the page's views that the protocol, the booking and the buttons share: into a
// phase (with focus on its heading), to a final state (sold out, expired, left, spent, unknown), to the
// booking made, and back into the line.

import { t } from '../i18n.js';
import { announce } from './announce.js';
import { el } from './dom.js';
import { render } from './render.js';
import { dropSocket, restart, sayLeaving, setConn, stop } from './socket.js';
import { save, st, store } from './state.js';

// setPhase shows phase p; arriving at the seat map moves focus to its heading.
export function setPhase(p) {
  const was = st.phase;
  st.phase = p;
  render();
  if (was !== p && p === 'admitted') focusHeading(el.admittedHeading);
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
  if (kind === 'left' || kind === 'sold_out') store.ended = kind;
  save();
  if (kind !== 'left') dropSocket(); // a leaving socket is closed by the server once it has left
  setConn('closed');
  render();
  focusHeading(el.finalHeading);
  announce(t(`final.${kind}.h`) + '. ' + t(`final.${kind}.p`));
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
  st.etaSeconds = null;
  st.selected.clear();
  st.seats = null;
  st.seatsState = 'idle';
  st.phase = 'connecting';
  restart();
}

// leave gives the place up. The server answers {"type":"leave"} by closing the socket.
export function leave() {
  sayLeaving();
  finish('left');
}
