// state.js: what the waiting room knows: the screening of the page, what this browser stored about it
// (localStorage "waitroom:room:{id}": the token, the place it arrived at, the pass, an offer's seats, the
// waitlist's answers, a finished booking), the state the views are drawn from, and the schedule of the
// socket's next retry.

import { Reconnect } from '../lib/reconnect.js';

// defaultMaxSeats is the most seats one reservation may hold when the screening does not say
// (max_seats in GET /api/screenings/{id}); the server enforces it either way.
const defaultMaxSeats = 4;
// Backoff after a lost connection (lib/reconnect.js): the n-th retry waits between half and all of
// min(cap, base × 2^n).
const backoffBaseMs = 1000;
const backoffCapMs = 30000;

// screening is the id in the page's path, /s/{id}; '' when it cannot be read.
export const screening = screeningFromPath();
export const storeKey = 'waitroom:room:' + screening;
export const enc = encodeURIComponent(screening);

function screeningFromPath() {
  const part = location.pathname.split('/')[2] || '';
  try {
    return decodeURIComponent(part);
  } catch (_) {
    return '';
  }
}

// store: {token, startRank, pass, expiresAtMs, offerSeats, waitlist, waitlistLine, stayed, party, notify,
// reservation, ended}. offerSeats is set while the pass is an offer of seats that came back ("offered": at
// most that many); waitlist while the place is on the waitlist of a sold-out sale, waitlistLine once its
// line became a waitlist (every seat held or sold, on a screening that keeps one: it stays one, admitting
// by offers, docs/protocol.md 5.4), stayed once the buyer chose to stay there,
// party the number of seats the buyer said it waits for, notify the e-mail notice the server took ({email,
// lang}, the address masked as the server answered it). The reservation is the order the server answered:
// {id, code, status: 'confirmed' | 'held' | 'expired' | 'cancelled', seats, createdAt, holdExpiresAtMs,
// checkoutUrl, ticketUrl}; a server without orders gives only id, seats and createdAt.
export function readStore() {
  try {
    const v = JSON.parse(localStorage.getItem(storeKey) || '{}');
    return v && typeof v === 'object' ? v : {};
  } catch (_) {
    return {};
  }
}

export let store = readStore();

// setStore replaces what is stored (another tab's copy, or only the booking); save writes it.
export function setStore(next) {
  store = next;
}

export function save() {
  try {
    localStorage.setItem(storeKey, JSON.stringify(store));
  } catch (_) { /* storage off: the place lasts as long as this page */ }
}

// st is what the page shows; render() draws it.
export const st = {
  phase: 'connecting', // connecting | entry | prequeue | waiting | waitlist | admitted (an offer too) | confirmed (an order, held or not) | final
  finalKind: '', // sold_out | closed | ended | expired | offer_expired | left | waitlist_left | spent | unknown | link_used | link_expired | link_unknown | link_error
  conn: 'connecting', // connecting | open | reconnecting | offline | closed
  rank: 0,
  total: 0,
  note: '', // a string key shown while waiting (backInLine)
  info: null, // GET /api/screenings/{id}
  seats: null, // GET /api/screenings/{id}/seats
  seatsState: 'idle', // idle | loading | ok | failed
  seatUpdates: new Map(), // seat id → status, from "seats" messages since the seat map was last fetched
  seatChanges: null, // {seats: [...]}: chosen seats someone else took meanwhile, said beside the map
  selected: new Set(),
  focusSeat: '',
  busy: false,
  awaitHeld: null, // {count}: a request by count refused while the seats left were only held, asked again when one comes back
  toSite: false, // admitted and on the way back to the site behind the gate (gate.js)
  message: null, // {kind: 'warn' | 'bad', text}
  warnedLow: false,
  skewMs: 0, // server clock minus this clock, from the tick_at of position messages (or the Date header)
  skewFromTick: false, // skewMs came from a tick_at, the finer estimate
  opensAtMs: 0, // the opening of the sale, while in the pre-queue
  preTotal: 0, // the pre-queue's size at the last prequeue message
  paused: false, // the operator paused admission
  allHeld: false, // every seat is held or sold, some only held: the wait goes on with no estimate
  allHeldHeard: false, // the socket has said all_held or reopened, which outranks the screening's state
  etaSeconds: null, // the wait estimate of the last position message, null when unknown
  codeError: '', // a string key: why the access code was refused, in the entry view (entry.js)
  powState: '', // the proof of work in the entry view: solving | solved | failed, or '' when none
  powNote: '', // a string key said while solving again (the server refused the last solution)
  waitlistNote: '', // a string key said on the waitlist (seats came back)
  partyBusy: false, // the waitlist's party size on its way to the server
  partyMessage: null, // {kind, key, vars}: how the party size fared
  notifyBusy: false, // the e-mail notice on its way to the server
  notifyMessage: null, // {kind, key, vars}: how the e-mail notice fared
};

export function serverNow() { return Date.now() + st.skewMs; }

// houseMaxSeats is the most seats one reservation may hold in this screening.
export function houseMaxSeats() {
  const n = st.info && st.info.max_seats;
  return Number.isInteger(n) && n > 0 ? n : defaultMaxSeats;
}

// offerSeats is how many seats the pass's offer allows ("offered"), or 0 when the pass is a plain turn.
export function offerSeats() {
  const n = store.offerSeats;
  return Number.isInteger(n) && n > 0 ? n : 0;
}

// maxSeats is the most seats this turn may book: the screening's limit, or fewer when the turn is an offer.
export function maxSeats() {
  const offer = offerSeats();
  return offer ? Math.min(offer, houseMaxSeats()) : houseMaxSeats();
}

// retry counts the retries since the last message from the server and holds the pending one.
export const retry = new Reconnect({ baseMs: backoffBaseMs, capMs: backoffCapMs });
