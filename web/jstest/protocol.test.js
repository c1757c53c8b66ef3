// protocol.test.js: the waiting room's handling of each server message (docs/protocol.md 4.2-4.4: queued,
// prequeue, position, paused, resumed, unavailable, available, all_held, reopened, admitted, seats,
// sold_out, error and its codes) and of each close code, run by Node's test runner with no browser: the
// real room modules (socket.js reads the socket, protocol.js acts on each message) over the fakes of
// fakes.js. Each test drives the page as the server would, through a FakeWebSocket, and reads what the page
// did: its state, the view shown, what it stored, what it sent, and when it connects again. The page's
// timers are fakes.js's, so a reconnect's wait is ticked, not slept.
//
// The modules keep their state for the whole file, as a page does: the tests run in order, and each starts
// a fresh place with the page's own "join again" (phases.js rejoin).

import { before, test } from 'node:test';
import assert from 'node:assert/strict';

import { answers, fetched, FakeWebSocket, storage, tick } from './fakes.js';
import { ordinal, t } from '../static/i18n.js';
import { reserveBest } from '../static/room/booking.js';
import { el } from '../static/room/dom.js';
import { leave, rejoin } from '../static/room/phases.js';
import { handle } from '../static/room/protocol.js';
import { connect, isStopped, onMessage } from '../static/room/socket.js';
import { retry, st, store, storeKey } from '../static/room/state.js';

const tokenA = '0f3d399a740e691de3f8954af48a15dc';
const tokenB = '2657b86cf25800df1d3b2670a3b6009a';

before(() => {
  onMessage(handle); // as main.js wires them
});

// stored is what the page keeps in localStorage for the screening.
function stored() {
  return JSON.parse(storage.get(storeKey) || '{}');
}

// opened runs the newest socket's open and returns it; the page says hello on it.
function opened() {
  const ws = FakeWebSocket.last();
  ws.open();
  return ws;
}

// freshPlace starts over as the page's "join again" does (a new token), and returns the open socket.
function freshPlace() {
  const before = FakeWebSocket.made.length;
  rejoin(true);
  assert.equal(FakeWebSocket.made.length, before + 1, 'join again opens a socket');
  return opened();
}

// waiting puts a fresh place in the open line at rank of total, with token.
function waiting(token, rank, total) {
  const ws = freshPlace();
  ws.receive({ type: 'queued', token, rank, total, inserted: true });
  return ws;
}

// announced is what the live region says once its pending announcement has run.
function announced() {
  tick(100);
  return el.live.textContent;
}

// views are the views shown.
function views() {
  const all = { entry: el.entry, prequeue: el.prequeue, waiting: el.waiting, admitted: el.admitted, confirmed: el.confirmed, final: el.final };
  return Object.keys(all).filter((k) => !all[k].hidden);
}

test('a first visit connects to the screening with auth=message and says hello with no token', () => {
  connect();
  const ws = opened();
  assert.equal(ws.url, 'ws://room.test/ws/screenings/demo?auth=message');
  assert.deepEqual(ws.sent, [{ type: 'hello' }]);
  assert.equal(st.conn, 'open');
});

test('queued: the page stores the token, shows the waiting view with rank and total', () => {
  const ws = FakeWebSocket.last();
  ws.receive({ type: 'queued', token: tokenA, rank: 3, total: 5, inserted: true });
  assert.equal(st.phase, 'waiting');
  assert.deepEqual(views(), ['waiting']);
  assert.equal(stored().token, tokenA);
  assert.equal(stored().startRank, 3);
  assert.equal(el.rank.dataset.rank, '3');
  assert.equal(el.rank.textContent, ordinal(3));
  assert.equal(el.total.dataset.total, '5');
  assert.equal(st.paused, false);
});

test('position: the rank moves, the progress and the wait estimate are shown, tick_at sets the server clock', () => {
  const ws = FakeWebSocket.last();
  const tickAt = Date.now() + 5000;
  ws.receive({ type: 'position', rank: 2, total: 6, tick_at: tickAt, eta_seconds: 125 });
  assert.equal(st.rank, 2);
  assert.equal(st.total, 6);
  assert.equal(el.rank.dataset.rank, '2');
  assert.equal(stored().startRank, 3, 'the place arrived at stays the start of the progress');
  assert.equal(el.progress.value, 50);
  assert.equal(st.etaSeconds, 125);
  assert.equal(el.eta.hidden, false);
  assert.equal(el.eta.textContent, t('eta.minutes', { min: 2 }));
  assert.ok(st.skewFromTick);
  assert.ok(Math.abs(st.skewMs - 5000) < 1000, `skewMs = ${st.skewMs}, want about 5000`);

  ws.receive({ type: 'position', rank: 1, total: 6, tick_at: tickAt });
  assert.equal(st.etaSeconds, null, 'a position without eta_seconds drops the estimate');
  assert.equal(el.eta.hidden, true);
  assert.equal(el.progressText.textContent, t('progressNext'));
});

test('paused and resumed: the notice shows and goes, and no estimate holds while paused', () => {
  const ws = FakeWebSocket.last();
  ws.receive({ type: 'position', rank: 1, total: 6, eta_seconds: 30 });
  ws.receive({ type: 'paused' });
  assert.equal(st.paused, true);
  assert.equal(el.pausedNotice.hidden, false);
  assert.equal(el.pausedText.textContent, t('pausedNotice'));
  assert.equal(st.etaSeconds, null);
  assert.equal(el.etaNone.dataset.why, 'paused');
  assert.equal(announced(), t('announce.paused'));

  ws.receive({ type: 'resumed' });
  assert.equal(st.paused, false);
  assert.equal(el.pausedNotice.hidden, true);
  assert.equal(announced(), t('announce.resumed'));
});

test('all_held and reopened: every seat held stops the estimate until seats are back', () => {
  const ws = FakeWebSocket.last();
  ws.receive({ type: 'all_held' });
  assert.equal(st.allHeld, true);
  assert.equal(el.allHeld.hidden, false);
  assert.equal(el.etaNone.dataset.why, 'held');
  assert.equal(announced(), t('announce.allHeld'));
  ws.receive({ type: 'position', rank: 1, total: 6, eta_seconds: 30 });
  assert.equal(st.etaSeconds, null, 'no estimate while every seat is held');

  ws.receive({ type: 'reopened' });
  assert.equal(st.allHeld, false);
  assert.equal(el.allHeld.hidden, true);
  ws.receive({ type: 'position', rank: 1, total: 6, eta_seconds: 30 });
  assert.equal(st.etaSeconds, 30);
});

test('seats before admission and a message of a later version change nothing', () => {
  const ws = FakeWebSocket.last();
  const was = JSON.stringify({ phase: st.phase, rank: st.rank, total: st.total, store: stored() });
  ws.receive({ type: 'seats', seats: [{ id: 'A1', status: 'sold' }] });
  ws.receive({ type: 'teleported', rank: 99 });
  assert.equal(st.seatUpdates.size, 0);
  assert.equal(JSON.stringify({ phase: st.phase, rank: st.rank, total: st.total, store: stored() }), was);
});

test('admitted: the pass and its expiry are stored, the seat map is loaded, and positions stop', async () => {
  const ws = FakeWebSocket.last();
  const expires = new Date(Date.now() + 3 * 60000);
  expires.setMilliseconds(0);
  fetched.length = 0;
  ws.receive({ type: 'admitted', pass: 'eyJ.pass', expires_at: expires.toISOString(), token: tokenA });
  assert.equal(st.phase, 'admitted');
  assert.deepEqual(views(), ['admitted']);
  assert.equal(stored().pass, 'eyJ.pass');
  assert.equal(stored().expiresAtMs, expires.getTime());
  assert.equal(stored().token, tokenA);
  await new Promise((resolve) => setImmediate(resolve)); // the page asks the gate first (none here)
  assert.deepEqual(fetched, ['/api/screenings/demo/seats']);
  assert.match(announced(), /^It is your turn\./);

  ws.receive({ type: 'position', rank: 4, total: 9 });
  assert.equal(st.phase, 'admitted');
  assert.equal(st.rank, 1, 'an admitted page takes no position');
});

test('seats while admitted: the changed seats are applied, and a chosen seat taken leaves the choice', () => {
  const ws = FakeWebSocket.last();
  st.selected.add('A1');
  ws.receive({ type: 'seats', seats: [{ id: 'A1', status: 'held' }, { id: 'A2', status: 'sold' }] });
  assert.equal(st.seatUpdates.get('A1'), 'held');
  assert.equal(st.seatUpdates.get('A2'), 'sold');
  assert.equal(st.selected.has('A1'), false);
  assert.deepEqual(st.seatChanges, { seats: ['A1'] });
});

test('NOT_ENOUGH_SEATS with seats only held: the page waits for a seat to come back, then asks again', async () => {
  const ws = FakeWebSocket.last();
  const path = '/api/screenings/demo/reservations';
  const posts = () => fetched.filter((p) => p === path).length;
  answers.set(path, { status: 409, body: { error: { code: 'NOT_ENOUGH_SEATS', message: 'not that many', held: 2 } } });
  fetched.length = 0;
  await reserveBest(1);
  assert.equal(posts(), 1);
  assert.deepEqual(st.awaitHeld, { count: 1 });
  assert.equal(st.message.text, t('notEnoughHeld', { n: 1 }));
  ws.receive({ type: 'seats', seats: [{ id: 'A3', status: 'held' }] });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(posts(), 1, 'a seat held by another is no reason to ask again');
  answers.set(path, { status: 409, body: { error: { code: 'NOT_ENOUGH_SEATS', message: 'not that many', held: 0 } } });
  ws.receive({ type: 'seats', seats: [{ id: 'A3', status: 'available' }] });
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(posts(), 2, 'a seat back on sale: the page asks again by itself');
  assert.equal(st.awaitHeld, null, 'no seat only held: nothing more to wait for');
  assert.equal(st.message.text, t('notEnoughSeats', { n: 1 }));
  answers.delete(path);
});

test('queued after a pass: the lapsed turn is dropped and the page says it is back in line', () => {
  const ws = FakeWebSocket.last();
  ws.closeFromServer(1006);
  tick(1000); // the first retry waits at most base (1 s)
  const again = opened();
  assert.deepEqual(again.sent, [{ type: 'hello', token: tokenA }], 'the reconnect says hello with the kept token');
  again.receive({ type: 'queued', token: tokenA, rank: 7, total: 7, inserted: true });
  assert.equal(st.phase, 'waiting');
  assert.equal(stored().pass, undefined);
  assert.equal(stored().expiresAtMs, undefined);
  assert.equal(st.note, 'backInLine');
  assert.equal(el.waitingNote.textContent, t('backInLine'));
  assert.equal(stored().startRank, 7, 'inserted: the new place is the new start');
});

test('prequeue, then the opening: a countdown with no rank, then the drawn place', () => {
  const ws = freshPlace();
  assert.deepEqual(ws.sent, [{ type: 'hello' }], 'join again asks for a new token');
  const opens = new Date(Date.now() + 60000);
  opens.setMilliseconds(0);
  ws.receive({ type: 'prequeue', token: tokenB, opens_at: opens.toISOString(), total: 4, inserted: true, paused: true });
  assert.equal(st.phase, 'prequeue');
  assert.deepEqual(views(), ['prequeue']);
  assert.equal(stored().token, tokenB);
  assert.equal(stored().startRank, undefined, 'no place before the opening');
  assert.equal(st.opensAtMs, opens.getTime());
  assert.equal(st.preTotal, 4);
  assert.equal(el.preTotal.dataset.total, '4');
  assert.equal(st.paused, true);
  assert.equal(el.pausedNotice.hidden, false);
  assert.match(el.countdown.textContent, /\d/);

  ws.receive({ type: 'resumed' });
  ws.receive({ type: 'position', rank: 2, total: 4, tick_at: opens.getTime() });
  assert.equal(st.phase, 'waiting');
  assert.equal(st.rank, 2);
  assert.equal(stored().startRank, 2);
  assert.equal(announced(), t('announce.opened', { rank: ordinal(2), total: '4' }));
});

test('sold_out "sold_out": the final view, the token forgotten, no reconnect after the close', () => {
  const ws = waiting(tokenA, 1, 1);
  ws.receive({ type: 'sold_out', reason: 'sold_out' });
  assert.equal(st.phase, 'final');
  assert.equal(st.finalKind, 'sold_out');
  assert.deepEqual(views(), ['final']);
  assert.equal(stored().token, undefined);
  assert.equal(stored().ended, 'sold_out');
  assert.ok(isStopped());
  assert.equal(ws.closedWith, 1000, 'the page closes its socket');
  assert.equal(announced(), t('final.sold_out.h') + '. ' + t('final.sold_out.p'));

  const made = FakeWebSocket.made.length;
  ws.closeFromServer(1000);
  ws.receive({ type: 'queued', token: tokenA, rank: 1, total: 1 });
  tick(60000);
  assert.equal(FakeWebSocket.made.length, made, 'a final state connects no more');
  assert.equal(st.phase, 'final', 'after a final state the socket is heard no more');
});

test('sold_out "closed": the operator closed the sale', () => {
  const ws = waiting(tokenA, 1, 1);
  ws.receive({ type: 'sold_out', reason: 'closed' });
  assert.equal(st.finalKind, 'closed');
  assert.equal(stored().ended, 'closed');
});

test('sold_out with no reason: the screening\'s state says which', async () => {
  const ws = waiting(tokenA, 1, 1);
  answers.set('/api/screenings/demo', { status: 200, body: { id: 'demo', name: 'Demo', state: 'closed' } });
  ws.receive({ type: 'sold_out' });
  assert.ok(isStopped(), 'no reconnect while the page asks');
  for (let i = 0; i < 5 && st.phase !== 'final'; i++) await new Promise((resolve) => setImmediate(resolve));
  answers.delete('/api/screenings/demo');
  st.info = null; // the screening the page read would outlive this test
  assert.equal(st.phase, 'final');
  assert.equal(st.finalKind, 'closed');
});

test('error UNKNOWN_SCREENING: the final view says there is no such screening', () => {
  const ws = freshPlace();
  ws.receive({ type: 'error', code: 'UNKNOWN_SCREENING', message: 'no such screening' });
  assert.equal(st.phase, 'final');
  assert.equal(st.finalKind, 'unknown');
  assert.equal(announced(), t('final.unknown.h') + '. ' + t('final.unknown.p'));
});

test('error BAD_TOKEN, close 1008: the token is dropped and the reconnect asks for a new one', () => {
  const ws = waiting(tokenA, 2, 2);
  ws.closeFromServer(1006);
  tick(1000);
  const again = opened();
  assert.deepEqual(again.sent, [{ type: 'hello', token: tokenA }]);
  again.receive({ type: 'error', code: 'BAD_TOKEN', message: 'a token is 32 lowercase hex digits' });
  assert.equal(stored().token, undefined);
  assert.equal(stored().startRank, undefined);
  again.closeFromServer(1008);
  assert.equal(st.conn, 'reconnecting');
  tick(4000); // an error is no sign of being back: the backoff went on growing (at most 2 s)
  const third = opened();
  assert.deepEqual(third.sent, [{ type: 'hello' }]);
});

test('error INTERNAL: the page drops the socket and connects again later with its token', () => {
  const ws = waiting(tokenA, 1, 3);
  const made = FakeWebSocket.made.length;
  ws.receive({ type: 'error', code: 'INTERNAL', message: 'internal error' });
  assert.equal(ws.closedWith, 1000);
  assert.equal(st.conn, 'reconnecting');
  assert.ok(retry.atMs > 0, 'a retry is pending');
  tick(2000);
  assert.equal(FakeWebSocket.made.length, made + 1);
  assert.deepEqual(opened().sent, [{ type: 'hello', token: tokenA }]);
});

test('error UNAVAILABLE after a leave: the leave is sent again; on connect the close 1013 waits longer', () => {
  const ws = waiting(tokenA, 1, 3);
  ws.receive({ type: 'error', code: 'UNAVAILABLE', message: 'try later' });
  assert.equal(st.phase, 'waiting', 'while waiting it changes nothing itself');
  ws.closeFromServer(1013);
  assert.equal(st.conn, 'reconnecting');
  const made = FakeWebSocket.made.length;
  tick(1999); // 1013: at least two backoff steps, between 2 and 4 s
  assert.equal(FakeWebSocket.made.length, made, 'no reconnect before 2 s');
  tick(2001);
  assert.equal(FakeWebSocket.made.length, made + 1);
  const again = opened();
  again.receive({ type: 'queued', token: tokenA, rank: 1, total: 3, inserted: false });
  leave(); // the leave dialog's "yes"
  assert.equal(st.finalKind, 'left');
  assert.deepEqual(again.sent.slice(-1), [{ type: 'leave' }]);
  again.receive({ type: 'error', code: 'UNAVAILABLE', message: 'try later' });
  assert.deepEqual(again.sent.slice(-2), [{ type: 'leave' }, { type: 'leave' }], 'the leave is sent again');
});

test('unavailable and available: the page keeps its place and its socket, and waits for the next position', () => {
  const ws = waiting(tokenA, 2, 4);
  const was = JSON.stringify({ phase: st.phase, rank: st.rank, conn: st.conn, store: stored() });
  ws.receive({ type: 'unavailable', message: 'the waiting room lost its line store for a moment' });
  ws.receive({ type: 'available' });
  assert.equal(JSON.stringify({ phase: st.phase, rank: st.rank, conn: st.conn, store: stored() }), was);
  assert.equal(ws.closedWith, null);
  ws.receive({ type: 'position', rank: 1, total: 4 });
  assert.equal(st.rank, 1);
});

test('error BAD_MESSAGE: the socket stays and so does the place', () => {
  const ws = waiting(tokenA, 2, 4);
  ws.receive({ type: 'error', code: 'BAD_MESSAGE', message: 'unexpected message' });
  assert.equal(st.phase, 'waiting');
  assert.equal(ws.closedWith, null);
  assert.equal(stored().token, tokenA);
});

test('error RATE_LIMITED, close 1013: the token is kept and the reconnect waits at least 2 s', () => {
  const ws = waiting(tokenA, 2, 4);
  ws.closeFromServer(1006);
  tick(1000);
  const again = opened();
  again.receive({ type: 'error', code: 'RATE_LIMITED', message: 'too many sockets from your address' });
  assert.equal(st.phase, 'waiting', 'not a refusal of the entry');
  const made = FakeWebSocket.made.length;
  again.closeFromServer(1013);
  tick(1999);
  assert.equal(FakeWebSocket.made.length, made, 'no reconnect before 2 s');
  tick(2001);
  assert.deepEqual(opened().sent, [{ type: 'hello', token: tokenA }]);
});

test('error BUSY, close 1013: the reconnect waits the retry_after_ms asked, spread over as long again, with the token', () => {
  const ws = waiting(tokenA, 2, 4);
  ws.closeFromServer(1006);
  tick(1000);
  const again = opened();
  again.receive({ type: 'error', code: 'BUSY', message: 'the waiting room is busy', retry_after_ms: 5000 });
  assert.equal(st.phase, 'waiting', 'not a refusal of the entry');
  const made = FakeWebSocket.made.length;
  again.closeFromServer(1013);
  tick(4999);
  assert.equal(FakeWebSocket.made.length, made, 'no reconnect before the 5 s asked');
  tick(5001);
  assert.deepEqual(opened().sent, [{ type: 'hello', token: tokenA }]);
  // The wait was for that refusal only: a later 1013 without BUSY backs off as before (2 to 4 s).
  const later = FakeWebSocket.made.length;
  opened().closeFromServer(1013);
  tick(4001);
  assert.equal(FakeWebSocket.made.length, later + 1);
});

test('a socket held in the infinite queue: its one queued, then close 1013 "try again later"; the page comes back with that token', () => {
  const ws = freshPlace();
  ws.receive({ type: 'queued', token: tokenB, rank: 41, total: 41, inserted: true });
  assert.equal(st.phase, 'waiting');
  assert.equal(stored().token, tokenB);
  const made = FakeWebSocket.made.length;
  ws.closeFromServer(1013);
  tick(1999);
  assert.equal(FakeWebSocket.made.length, made, 'no reconnect before 2 s');
  tick(2001);
  assert.deepEqual(opened().sent, [{ type: 'hello', token: tokenB }]);
});

test('close 1000 with no final message (the server ended a silent socket): the page reconnects with its token', () => {
  const ws = waiting(tokenA, 2, 4);
  const made = FakeWebSocket.made.length;
  ws.closeFromServer(1000);
  assert.equal(st.conn, 'reconnecting');
  assert.equal(announced(), t('announce.lost'));
  tick(1000);
  assert.equal(FakeWebSocket.made.length, made + 1);
  assert.deepEqual(opened().sent, [{ type: 'hello', token: tokenA }]);
});

test('close 1012, server restarting: the page comes back soon, within 0.25-2.25 s, with its token', () => {
  const ws = waiting(tokenA, 1, 1);
  const made = FakeWebSocket.made.length;
  ws.closeFromServer(1012);
  tick(249);
  assert.equal(FakeWebSocket.made.length, made, 'not before 250 ms');
  tick(2001);
  assert.equal(FakeWebSocket.made.length, made + 1);
  const again = opened();
  assert.deepEqual(again.sent, [{ type: 'hello', token: tokenA }]);
  again.receive({ type: 'queued', token: tokenA, rank: 1, total: 1, inserted: false });
  assert.equal(st.phase, 'waiting');
  assert.equal(announced(), t('announce.back'));
});

test('a refusal of the entry (CODE_INVALID, close 1008): the entry view asks again and nothing reconnects', () => {
  const ws = freshPlace();
  ws.receive({ type: 'error', code: 'CODE_INVALID', message: 'unknown code' });
  assert.equal(st.phase, 'entry');
  assert.deepEqual(views(), ['entry']);
  assert.equal(el.codeForm.hidden, false);
  assert.equal(st.codeError, 'code.CODE_INVALID');
  assert.equal(el.codeError.textContent, t('code.CODE_INVALID'));
  const made = FakeWebSocket.made.length;
  ws.closeFromServer(1008);
  tick(60000);
  assert.equal(FakeWebSocket.made.length, made, 'the page waits for the visitor, not the backoff');
});

test('a refusal of the proof of work (POW_REQUIRED): the entry view shows the proof of work', () => {
  const ws = freshPlace();
  ws.receive({ type: 'error', code: 'POW_REQUIRED', message: 'a proof of work is needed' });
  assert.equal(st.phase, 'entry');
  assert.equal(el.pow.hidden, false);
  assert.ok(isStopped());
});
