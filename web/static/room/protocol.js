// protocol.js: what the page does with each message of the server (docs/protocol.md): queued, prequeue,
// position, paused, resumed, all_held, reopened, admitted, offered, seats, sold_out and error. A message of
// a later protocol version is ignored.
//
// Before the sale opens the server answers "prequeue": the page counts down to opens_at (by its estimate of
// the server clock) until the first "position" gives the place drawn at the opening. "position" may carry a
// wait estimate (eta_seconds); "paused" and "resumed" show and hide the operator's pause; "all_held" says
// every seat is held by someone paying (the wait goes on, with no estimate) until "reopened". Once admitted,
// "seats" redraws the seats that changed. "sold_out" says why the sale is over in its reason: every seat
// sold ("sold_out"), or the operator closed the sale ("closed").
//
// With the waitlist on, "sold_out" comes with "waitlist": true and the socket stays open: the page shows the
// waitlist (waitlist.js), "position" gives the place on it, and seats that come back are offered in its
// order ("reopened" says they came back; the page stays on the waitlist): "offered" is a turn like
// "admitted" (its pass reserves the same way), limited to its "seats" and ending at its expires_at, after
// which the seats go to the next on the waitlist.

import { t, num, ordinal } from '../i18n.js';
import { announce, announceRank } from './announce.js';
import { loadSeats, saleOver, seatsChanged } from './booking.js';
import { el } from './dom.js';
import { refused, welcomed } from './entry.js';
import { backToSite } from './gate.js';
import { finish, focusHeading, leaving, setPhase } from './phases.js';
import { showReceipt } from './receipt.js';
import { render } from './render.js';
import { siteName, siteWide } from './site.js';
import { busyFor, dropSocket, isStopped, retryLater, sendIfOpen } from './socket.js';
import { maxSeats, retry, save, serverNow, st, store } from './state.js';

// waitlistConfirmMs: a place that was on the waitlist and connects again hears "queued" first, then
// "sold_out" with "waitlist": true; the page keeps showing the waitlist that long for it, and shows the line
// only when it does not come (the sale reopened meanwhile).
const waitlistConfirmMs = 2000;

// offerTtlMs is an offer's length when its expires_at cannot be read (booking.offer_ttl's default).
const offerTtlMs = 10 * 60000;

let waitlistCheck = 0; // the pending end of waitlistConfirmMs

// handle reads one message; socket.js calls it for each.
export function handle(m) {
  // After a final state only a leaving socket is still open; what it hears no longer changes the page.
  if (isStopped() && !(m && m.type === 'error')) return;
  switch (m && m.type) {
    case 'queued': onQueued(m); break;
    case 'prequeue': onPrequeue(m); break;
    case 'position': onPosition(m); break;
    case 'paused': onPaused(true); break;
    case 'resumed': onPaused(false); break;
    case 'all_held': onAllHeld(true); break;
    case 'reopened': onAllHeld(false); break;
    case 'admitted': onAdmitted(m); break;
    case 'offered': onOffered(m); break;
    case 'seats': if (st.phase === 'admitted') seatsChanged(m.seats); break;
    case 'sold_out':
      if (m.waitlist === true) onWaitlist();
      else saleOver(typeof m.reason === 'string' ? m.reason : '');
      break;
    case 'error': onError(m); break;
    default: break; // a message of a later protocol version
  }
}

function onQueued(m) {
  welcomed();
  if (typeof m.token === 'string' && m.token) store.token = m.token;
  if (store.pass) {
    // A turn was given and has lapsed: the server put this token at the end of the line.
    delete store.pass;
    delete store.expiresAtMs;
    delete store.offerSeats;
    st.note = 'backInLine';
    st.selected.clear();
  }
  if (m.inserted || !store.startRank) store.startRank = m.rank;
  delete store.ended;
  save();
  const opened = st.phase === 'prequeue';
  st.paused = m.paused === true;
  st.etaSeconds = null;
  if (store.waitlist) {
    // On the waitlist before this connect: it stays shown while its sold_out is on the way.
    clearTimeout(waitlistCheck);
    waitlistCheck = setTimeout(waitlistLapsed, waitlistConfirmMs);
    setPhase('waitlist');
    setRank(m.rank, m.total);
    showReceipt(m.receipt, el);
    return;
  }
  setPhase('waiting');
  setRank(m.rank, m.total);
  showReceipt(m.receipt, el);
  if (opened) onOpened();
}

// onPrequeue: the sale has not opened; every token that arrives before it gets a random place at the
// opening, so there is no rank yet, only a countdown. The token is kept as for "queued".
function onPrequeue(m) {
  welcomed();
  if (typeof m.token === 'string' && m.token) store.token = m.token;
  if (store.pass) {
    delete store.pass;
    delete store.expiresAtMs;
    delete store.offerSeats;
    st.selected.clear();
  }
  delete store.waitlist;
  delete store.waitlistLine; // a line that has not opened has sold nothing
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
  showReceipt(m.receipt, el);
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

// onAllHeld: every seat is held or sold (all_held), so nobody is admitted until a hold runs out or is
// cancelled; or seats are back (reopened) and the line moves again.
function onAllHeld(held) {
  st.allHeldHeard = true;
  if (!held && st.phase === 'waitlist') {
    // Seats came back to a sale that keeps its waitlist: they are offered in its order ("offered" follows
    // for the first), so the place stays on it.
    st.waitlistNote = 'waitlist.seatsBack';
    st.allHeld = false;
    render();
    announce(t('waitlist.seatsBack'));
    return;
  }
  if (held && st.info && st.info.waitlist === true && !store.waitlistLine) {
    // From the first all_held the line is the screening's waitlist, and stays one (docs/protocol.md 5.4).
    store.waitlistLine = true;
    save();
  }
  if (st.allHeld === held) return;
  st.allHeld = held;
  if (held) st.etaSeconds = null; // no estimate holds while nobody can be admitted
  render();
  if (st.phase === 'waiting' || st.phase === 'prequeue') announce(t(held ? 'announce.allHeld' : 'announce.reopened'));
}

// onWaitlist: the sale sold out with the waitlist on. The socket stays open and the place with it: the page
// shows the waitlist, whose place the next "position" gives. A turn given meanwhile is over (no seat is left
// to book with it).
function onWaitlist() {
  clearTimeout(waitlistCheck);
  waitlistCheck = 0;
  const first = !store.waitlist;
  if (store.pass) {
    delete store.pass;
    delete store.expiresAtMs;
    delete store.offerSeats;
    st.selected.clear();
    st.busy = false;
  }
  store.waitlist = true;
  store.waitlistLine = true;
  delete store.ended;
  save();
  st.note = '';
  st.waitlistNote = ''; // sold out again, if seats had come back
  st.etaSeconds = null;
  st.allHeld = false;
  const was = st.phase;
  setPhase('waitlist');
  if (first || was !== 'waitlist') {
    focusHeading(el.waitlistHeading);
    announce(t('waitlist.heading') + '. ' + t('waitlist.text'));
  }
}

// waitlistLapsed: a connect of a place that was on the waitlist heard no sold_out: the sale is not sold out
// now (seats came back and are being offered, or the operator reset it), and the page shows the line.
function waitlistLapsed() {
  waitlistCheck = 0;
  if (st.phase !== 'waitlist' || isStopped()) return;
  delete store.waitlist;
  delete store.stayed;
  save();
  st.waitlistNote = '';
  setPhase('waiting');
}

function onPosition(m) {
  if (typeof m.tick_at === 'number' && m.tick_at > 0) {
    // The tick happened before the message arrived, so this errs towards a server clock that is behind,
    // which makes the countdown end late rather than early.
    st.skewMs = m.tick_at - Date.now();
    st.skewFromTick = true;
  }
  if (st.phase === 'waitlist') {
    // The place on the waitlist, and its length.
    setRank(m.rank, m.total);
    return;
  }
  if (st.phase !== 'waiting' && st.phase !== 'connecting' && st.phase !== 'prequeue') return;
  const opened = st.phase === 'prequeue';
  st.etaSeconds = typeof m.eta_seconds === 'number' && Number.isFinite(m.eta_seconds) && m.eta_seconds >= 0 && !st.allHeld ? m.eta_seconds : null;
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
  welcomed();
  if (typeof m.token === 'string' && m.token) store.token = m.token;
  const expires = Date.parse(m.expires_at);
  store.pass = String(m.pass || '');
  store.expiresAtMs = Number.isNaN(expires) ? serverNow() + 5 * 60000 : expires;
  delete store.offerSeats; // a plain turn
  delete store.waitlist;
  delete store.stayed;
  delete store.ended;
  clearTimeout(waitlistCheck);
  save();
  st.note = '';
  const first = st.phase !== 'admitted';
  // Sent here by the gate in front of a site: back to it with the pass, instead of the seat map.
  const toSite = backToSite();
  setPhase('admitted');
  toSite.then((sent) => { if (!sent && !siteWide()) loadSeats(); });
  if (first && !st.toSite) {
    st.warnedLow = false;
    const min = Math.max(1, Math.round((store.expiresAtMs - serverNow()) / 60000));
    announce(siteWide() ? t('site.announce', { min, site: siteName() }) : t('announce.admitted', { min }));
  }
}

// onOffered: seats came back and it is this place's turn on the waitlist. The pass reserves as an admitted
// one does, at most "seats" seats, until expires_at; then the seats go to the next in line.
function onOffered(m) {
  welcomed();
  if (typeof m.token === 'string' && m.token) store.token = m.token;
  const expires = Date.parse(m.expires_at);
  const seats = Number(m.seats);
  const first = st.phase !== 'admitted' || !store.offerSeats;
  store.pass = String(m.pass || '');
  store.expiresAtMs = Number.isNaN(expires) ? serverNow() + offerTtlMs : expires;
  store.offerSeats = Number.isInteger(seats) && seats > 0 ? seats : 1;
  delete store.waitlist;
  delete store.stayed;
  delete store.ended;
  clearTimeout(waitlistCheck);
  waitlistCheck = 0;
  save();
  st.note = '';
  st.waitlistNote = '';
  st.allHeld = false;
  // A choice made before the offer keeps only what the offer allows.
  for (const id of [...st.selected].slice(maxSeats())) st.selected.delete(id);
  setPhase('admitted');
  if (first) {
    st.warnedLow = false;
    loadSeats();
    const min = Math.max(1, Math.round((store.expiresAtMs - serverNow()) / 60000));
    announce(t('announce.offered', { n: maxSeats(), min }));
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
    case 'BUSY':
      // The server could not register the socket in time; its close (1013) follows, and the reconnect
      // waits what the server asked (socket.js). The token keeps its place.
      busyFor(m.retry_after_ms);
      break;
    case 'UNAVAILABLE':
      // After a leave the socket stays open and the leave may be sent again; on connect a close
      // (1013) follows and is retried with backoff.
      if (st.phase === 'final' && leaving(st.finalKind)) sendIfOpen({ type: 'leave' });
      break;
    default:
      // The entry's refusals (a proof of work or an access code needed, or not good): back to the entry
      // view, the token kept. Else BAD_MESSAGE and codes of later versions.
      if (st.phase !== 'final' && st.phase !== 'confirmed') refused(m.code);
      break;
  }
}
