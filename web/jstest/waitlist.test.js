// waitlist.test.js: the waiting room after a sell-out with the waitlist on, run by Node's test runner with no
// browser, on the real room modules over the fakes of fakes.js: "sold_out" with "waitlist": true keeps the
// socket and shows the waitlist; "position" is then the place on it; staying sends nothing and leaving sends
// {"type":"leave"}; the party size (PUT .../waitlist), on the waitlist and while every seat is held; the
// e-mail notice (PUT and DELETE .../notify); "offered", a turn limited to its seats with a countdown to its
// expires_at, and its end; a reconnect on the waitlist, and "reopened"; and the link of the e-mail (?claim=:
// POST /api/notify/claim), taken or refused.
//
// As in protocol.test.js, the modules keep their state for the whole file, as a page does: the tests run in
// order. Node runs each test file in a process of its own, so this page starts fresh.

import { before, test } from 'node:test';
import assert from 'node:assert/strict';

import { answers, fetched, FakeWebSocket, replaced, requests, storage, tick } from './fakes.js';
import { t } from '../static/i18n.js';
import { toggleSeat } from '../static/room/booking.js';
import { claimPlace } from '../static/room/claim.js';
import { el } from '../static/room/dom.js';
import { subscribe, unsubscribe } from '../static/room/notify.js';
import { askLeave, checkTurnEnd, closeLeave, keepsToken, rejoin } from '../static/room/phases.js';
import { handle } from '../static/room/protocol.js';
import { render } from '../static/room/render.js';
import { connect, isStopped, onMessage, pageHidden, pageShown } from '../static/room/socket.js';
import { save, setStore, st, store, storeKey } from '../static/room/state.js';
import { saveParty, stay } from '../static/room/waitlist.js';

const tokenA = '0f3d399a740e691de3f8954af48a15dc';
const tokenB = '2657b86cf25800df1d3b2670a3b6009a';
const tokenC = '9b1c0e4f5a6d7e8f90a1b2c3d4e5f607';

// screeningInfo is GET /api/screenings/demo as the page read it: the waitlist on, e-mail off until a test
// says otherwise, 4 seats a reservation.
const screeningInfo = { id: 'demo', name: 'Demo', max_seats: 4, waitlist: true, notify: false, state: 'sold_out' };

before(() => {
  onMessage(handle); // as main.js wires them
  st.info = { ...screeningInfo };
});

function stored() {
  return JSON.parse(storage.get(storeKey) || '{}');
}

function opened() {
  const ws = FakeWebSocket.last();
  ws.open();
  return ws;
}

function announced() {
  tick(100);
  return el.live.textContent;
}

function views() {
  const all = { entry: el.entry, prequeue: el.prequeue, waiting: el.waiting, waitlist: el.waitlist, admitted: el.admitted, confirmed: el.confirmed, final: el.final };
  return Object.keys(all).filter((k) => !all[k].hidden);
}

// settle lets the page's pending promises (a fetch and what follows it) run.
async function settle() {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

// lastRequest is the page's latest request to path.
function lastRequest(path) {
  return requests.filter((r) => r.path === path).at(-1);
}

// onWaitlist puts a fresh place (the page's "join again") in the line and then on the waitlist.
function onWaitlist(token, rank, total) {
  rejoin(true);
  const ws = opened();
  ws.receive({ type: 'queued', token, rank, total, inserted: true });
  ws.receive({ type: 'sold_out', reason: 'sold_out', waitlist: true });
  return ws;
}

test('a newcomer to a sold-out sale with the waitlist on: queued, then sold_out with waitlist: the waitlist view, the socket kept', () => {
  connect();
  const ws = opened();
  assert.deepEqual(ws.sent, [{ type: 'hello' }]);
  ws.receive({ type: 'queued', token: tokenA, rank: 3, total: 3, inserted: true });
  assert.equal(st.phase, 'waiting');
  ws.receive({ type: 'sold_out', reason: 'sold_out', waitlist: true });
  assert.equal(st.phase, 'waitlist');
  assert.deepEqual(views(), ['waitlist']);
  assert.equal(ws.closedWith, null, 'the page keeps its socket');
  assert.equal(isStopped(), false);
  assert.equal(st.conn, 'open');
  assert.equal(stored().token, tokenA, 'the place is kept');
  assert.equal(stored().waitlist, true);
  assert.equal(stored().ended, undefined);
  assert.equal(el.waitlistPlace.textContent, 'Your place on the waitlist: 3 of 3');
  assert.equal(el.waitlistStay.hidden, false, 'stay or leave is asked');
  assert.equal(announced(), t('waitlist.heading') + '. ' + t('waitlist.text'));
  assert.equal(t('waitlist.text'), 'Stay on the waitlist: if seats come back, you are offered them in your order.');

  const made = FakeWebSocket.made.length;
  tick(60000);
  assert.equal(FakeWebSocket.made.length, made, 'nothing closed, nothing reconnects');
  assert.equal(st.phase, 'waitlist');
});

test('position on the waitlist: the place on it and its length, "Your place on the waitlist: N of M"', () => {
  const ws = FakeWebSocket.last();
  ws.receive({ type: 'position', rank: 2, total: 5, tick_at: Date.now() });
  assert.equal(st.phase, 'waitlist', 'a position does not take the page back to the line');
  assert.equal(el.waitlistPlace.dataset.rank, '2');
  assert.equal(el.waitlistPlace.dataset.total, '5');
  assert.equal(el.waitlistPlace.textContent, 'Your place on the waitlist: 2 of 5');
  assert.equal(el.waitlistPlace.hidden, false);
});

test('stay: nothing is sent, the answer is kept, and the way out stays', () => {
  const ws = FakeWebSocket.last();
  const sent = ws.sent.length;
  stay();
  assert.equal(ws.sent.length, sent, 'staying sends nothing');
  assert.equal(stored().stayed, true);
  assert.equal(el.waitlistStay.hidden, true);
  assert.equal(el.waitlistLeave.hidden, false);
  assert.equal(el.waitlistStayed.textContent, t('waitlist.stayedText'));
  assert.equal(document.activeElement, el.partySize, 'focus moves on to the party size');
});

test('party size: a choice of 1 to max_seats starting on the server\'s 1, sent as PUT /api/screenings/demo/waitlist {token, party}', async () => {
  const path = '/api/screenings/demo/waitlist';
  assert.equal(el.party.hidden, false);
  assert.deepEqual(el.partySize.options.map((o) => o.value), ['1', '2', '3', '4']);
  assert.equal(el.partySize.value, '1', 'a party is 1 until the buyer asks for more');

  el.partySize.value = '3';
  answers.set(`PUT ${path}`, { status: 200, body: { party: 3 } });
  await saveParty();
  assert.deepEqual(lastRequest(path), { method: 'PUT', path, body: { token: tokenA, party: 3 } });
  assert.equal(stored().party, 3);
  assert.equal(el.partyStatus.textContent, 'Saved: you wait for 3 seats.');
  assert.equal(el.partyStatus.dataset.state, 'ok');
  assert.equal(el.partySize.value, '3');

  for (const [status, code, key] of [[409, 'WAITLIST_OFF', 'party.WAITLIST_OFF'], [404, 'NOT_IN_LINE', 'party.NOT_IN_LINE'], [400, 'INVALID_PARTY', 'party.INVALID_PARTY']]) {
    answers.set(`PUT ${path}`, { status, body: { error: { code, message: 'refused' } } });
    await saveParty();
    assert.equal(el.partyStatus.textContent, t(key, { max: 4 }), code);
    assert.equal(el.partyStatus.dataset.state, 'bad');
  }
  // An error body with its code at the top, as {"code", "message"}, reads the same.
  answers.set(`PUT ${path}`, { status: 409, body: { code: 'WAITLIST_OFF', message: 'off' } });
  await saveParty();
  assert.equal(el.partyStatus.textContent, t('party.WAITLIST_OFF'));
  assert.equal(stored().party, 3, 'a refusal keeps the size the server took');
  answers.delete(`PUT ${path}`);
});

test('the e-mail notice: shown only while the screening says notify; PUT with the token, the address and the page\'s language; DELETE', async () => {
  const path = '/api/screenings/demo/notify';
  render();
  assert.equal(el.notify.hidden, true, 'hidden while the server sends no e-mail');
  st.info.notify = true;
  render();
  assert.equal(el.notify.hidden, false);
  assert.equal(el.notifyForm.hidden, false);
  assert.equal(t('notify.label'), 'Notify me by e-mail when it is my turn');

  el.notifyEmail.value = 'not an address';
  await subscribe();
  assert.equal(lastRequest(path), undefined, 'a first check before the server\'s');
  assert.equal(el.notifyEmail.getAttribute('aria-invalid'), 'true');

  el.notifyEmail.value = ' ann@b.example ';
  answers.set(`PUT ${path}`, { status: 200, body: { email: 'a***@b.example', lang: 'en' } });
  await subscribe();
  assert.deepEqual(lastRequest(path), { method: 'PUT', path, body: { token: tokenA, email: 'ann@b.example', lang: 'en' } });
  assert.deepEqual(stored().notify, { email: 'a***@b.example', lang: 'en' }, 'only the masked address is kept');
  assert.equal(el.notifyForm.hidden, true);
  assert.equal(el.notifySet.hidden, false);
  assert.equal(el.notifyAddress.textContent, 'We will e-mail a***@b.example when it is your turn.');
  assert.equal(document.activeElement, el.notifyAddress);
  assert.equal(el.notifyEmail.value, '');

  answers.set(`DELETE ${path}`, { status: 204, body: null });
  await unsubscribe();
  assert.deepEqual(lastRequest(path), { method: 'DELETE', path, body: { token: tokenA } });
  assert.equal(stored().notify, undefined);
  assert.equal(el.notifyForm.hidden, false);
  assert.equal(el.notifyStatus.textContent, t('notify.stopped'));

  el.notifyEmail.value = 'x@y';
  answers.set(`PUT ${path}`, { status: 400, body: { error: { code: 'INVALID_EMAIL', message: 'bad address' } } });
  await subscribe();
  assert.equal(el.notifyStatus.textContent, t('notify.INVALID_EMAIL'));
  assert.equal(el.notifyEmail.getAttribute('aria-invalid'), 'true');

  answers.set(`PUT ${path}`, { status: 404, body: { error: { code: 'NOT_IN_LINE', message: 'no place' } } });
  await subscribe();
  assert.equal(el.notifyStatus.textContent, t('notify.NOT_IN_LINE'));

  answers.set(`PUT ${path}`, { status: 409, body: { error: { code: 'NOTIFY_OFF', message: 'no mail' } } });
  await subscribe();
  assert.equal(el.notify.hidden, true, 'a server that sends no e-mail: the field goes');
  assert.equal(announced(), t('notify.NOTIFY_OFF'));
  answers.delete(`PUT ${path}`);
  answers.delete(`DELETE ${path}`);
  st.info.notify = true;
});

test('offered: the pass and its seats kept, the offer said with a countdown to expires_at, a choice of at most those seats', async () => {
  const ws = FakeWebSocket.last();
  const seats = ['A1', 'A2', 'A3', 'A4'].map((id, i) => ({ id, row: 'A', number: i + 1, status: 'available' }));
  answers.set('/api/screenings/demo/seats', { status: 200, body: seats });
  fetched.length = 0;
  const expires = new Date(Date.now() + 10 * 60000);
  expires.setMilliseconds(0);
  ws.receive({ type: 'offered', token: tokenA, pass: 'eyJ.offer', seats: 2, expires_at: expires.toISOString() });
  assert.equal(st.phase, 'admitted');
  assert.deepEqual(views(), ['admitted']);
  assert.equal(el.notify.hidden, true, 'no e-mail notice once it is the turn');
  assert.equal(stored().pass, 'eyJ.offer');
  assert.equal(stored().expiresAtMs, expires.getTime());
  assert.equal(stored().offerSeats, 2);
  assert.equal(stored().waitlist, undefined);
  assert.equal(el.admitted.dataset.offer, 'true');
  assert.equal(el.admittedHeading.textContent, 'Seats came back: you may book up to 2 seats');
  assert.equal(el.timerLabel.textContent, t('offer.timeLeft'));
  assert.match(el.timer.textContent, /^(09|10):\d\d$/, 'the countdown to expires_at');
  assert.equal(el.offerText.hidden, false);
  assert.match(announced(), /^Seats came back\. You may book up to 2 seats within 10 minutes\.$/);
  await settle();
  assert.deepEqual(fetched, ['/api/screenings/demo/seats']);
  assert.equal(el.bestCount.options.length, 2, 'the best seats: at most the seats offered');

  toggleSeat('A1');
  toggleSeat('A2');
  toggleSeat('A3');
  assert.deepEqual([...st.selected].sort(), ['A1', 'A2']);
  assert.equal(st.message.text, t('maxSeats', { max: 2 }));

  ws.receive({ type: 'position', rank: 1, total: 3 });
  assert.equal(st.phase, 'admitted', 'an offer takes no position');
});

test('the offer runs out: "Your offer expired; the seats were offered to the next in line."', () => {
  const ws = FakeWebSocket.last();
  assert.equal(checkTurnEnd(), false, 'not before expires_at');
  store.expiresAtMs = Date.now() - 1000;
  assert.equal(checkTurnEnd(), true);
  assert.equal(st.phase, 'final');
  assert.equal(st.finalKind, 'offer_expired');
  assert.equal(el.finalText.textContent, 'Your offer expired; the seats were offered to the next in line.');
  assert.equal(stored().pass, undefined);
  assert.equal(stored().offerSeats, undefined);
  assert.equal(stored().token, tokenA, 'joining again puts the same token at the end');
  assert.equal(el.rejoin.hidden, false);
  assert.equal(ws.closedWith, 1000);
  assert.equal(keepsToken('offer_expired'), true);
});

test('a reconnect on the waitlist: queued, then sold_out, shows the waitlist throughout; queued alone, the line after a moment', () => {
  const ws = onWaitlist(tokenB, 4, 4);
  assert.equal(st.phase, 'waitlist');
  ws.closeFromServer(1006);
  tick(1000);
  let again = opened();
  assert.deepEqual(again.sent, [{ type: 'hello', token: tokenB }]);
  again.receive({ type: 'queued', token: tokenB, rank: 4, total: 4, inserted: false });
  assert.equal(st.phase, 'waitlist', 'no flash of the line while sold_out is on its way');
  again.receive({ type: 'sold_out', reason: 'sold_out', waitlist: true });
  tick(5000);
  assert.equal(st.phase, 'waitlist');
  assert.equal(stored().waitlist, true);

  // The sale reopened while the page was away: no sold_out follows, and the line is shown.
  again.closeFromServer(1006);
  tick(1000);
  again = opened();
  again.receive({ type: 'queued', token: tokenB, rank: 2, total: 4, inserted: false });
  tick(1999);
  assert.equal(st.phase, 'waitlist');
  tick(2);
  assert.equal(st.phase, 'waiting');
  assert.equal(stored().waitlist, undefined);
  assert.equal(el.rank.dataset.rank, '2');
});

test('reopened on the waitlist: seats came back and are offered in its order, so the place stays on it', () => {
  const ws = onWaitlist(tokenB, 2, 2);
  ws.receive({ type: 'reopened' });
  assert.equal(st.phase, 'waitlist');
  assert.deepEqual(views(), ['waitlist']);
  assert.equal(el.waitlistNote.textContent, t('waitlist.seatsBack'));
  assert.equal(announced(), t('waitlist.seatsBack'));
  assert.equal(stored().waitlist, true);
  assert.equal(ws.closedWith, null);
  ws.receive({ type: 'sold_out', reason: 'sold_out', waitlist: true });
  assert.equal(el.waitlistNote.textContent, '', 'sold out again: the seats went');
});

test('every seat held on a screening that keeps a waitlist: the line is one already, and asks the party size', () => {
  rejoin(true);
  const ws = opened();
  ws.receive({ type: 'queued', token: tokenB, rank: 2, total: 2, inserted: true });
  assert.equal(el.party.hidden, true, 'no party size in a line that moves');
  ws.receive({ type: 'all_held' });
  assert.equal(st.phase, 'waiting');
  assert.equal(el.party.hidden, false);
  assert.equal(el.allHeldText.textContent, t('allHeldWaitlist'));
  assert.equal(stored().waitlistLine, true);
  ws.receive({ type: 'reopened' });
  assert.equal(st.phase, 'waiting');
  assert.equal(el.party.hidden, false, 'seats back: the line stays a waitlist, offering by party');

  // A screening without a waitlist: every seat held is only a wait, and the seats back go by the pace.
  st.info.waitlist = false;
  rejoin(true);
  const again = opened();
  again.receive({ type: 'queued', token: tokenB, rank: 2, total: 2, inserted: true });
  again.receive({ type: 'all_held' });
  assert.equal(el.party.hidden, true);
  assert.equal(el.allHeldText.textContent, t('allHeldNotice'));
  assert.equal(stored().waitlistLine, undefined);
  st.info.waitlist = true;
});

test('sold_out without waitlist on the waitlist (the operator closed the sale): the page ends as before', () => {
  const ws = onWaitlist(tokenB, 1, 2);
  ws.receive({ type: 'sold_out', reason: 'closed' });
  assert.equal(st.phase, 'final');
  assert.equal(st.finalKind, 'closed');
  assert.equal(ws.closedWith, 1000);
  assert.equal(stored().waitlist, undefined);
});

test('leave the waitlist: asked first, then {"type":"leave"}', () => {
  const ws = onWaitlist(tokenB, 2, 3);
  askLeave();
  assert.equal(el.leaveDialog.open, true);
  assert.equal(el.leaveTitle.textContent, t('waitlist.leaveTitle'));
  assert.equal(el.leaveText.textContent, t('waitlist.leaveText'));
  assert.equal(el.leaveStay.textContent, t('waitlist.stay'));
  assert.equal(el.leaveConfirm.textContent, t('waitlist.leave'));
  closeLeave(false);
  assert.equal(st.phase, 'waitlist', 'staying changes nothing');
  assert.deepEqual(ws.sent, [{ type: 'hello' }]);
  askLeave();
  closeLeave(true);
  assert.deepEqual(ws.sent.at(-1), { type: 'leave' });
  assert.equal(st.finalKind, 'waitlist_left');
  assert.equal(stored().token, undefined);
  assert.equal(stored().ended, 'waitlist_left');
  assert.equal(el.finalTitle.textContent, t('final.waitlist_left.h'));
});

test('a page put in the back-forward cache lets its socket go, so the server may mail the turn; shown again, it connects', () => {
  rejoin(true);
  const ws = opened();
  ws.receive({ type: 'queued', token: tokenB, rank: 3, total: 3, inserted: true });
  const made = FakeWebSocket.made.length;
  pageHidden({ persisted: false });
  assert.equal(ws.closedWith, null, 'a page unloaded for good closes its socket by itself');
  pageHidden({ persisted: true });
  assert.equal(ws.closedWith, 1000);
  tick(60000);
  assert.equal(FakeWebSocket.made.length, made, 'no reconnect while the page is away');
  pageShown({ persisted: true });
  assert.equal(FakeWebSocket.made.length, made + 1);
  assert.deepEqual(opened().sent, [{ type: 'hello', token: tokenB }]);
});

test('the e-mail notice while waiting in the line, too', () => {
  rejoin(true);
  const ws = opened();
  ws.receive({ type: 'queued', token: tokenB, rank: 5, total: 9, inserted: true });
  assert.equal(st.phase, 'waiting');
  assert.equal(el.notify.hidden, false);
  st.info.notify = false;
  render();
  assert.equal(el.notify.hidden, true);
  st.info.notify = true;
});

test('the link of the e-mail: POST /api/notify/claim, the token kept, the claim out of the address, then a hello with the token', async () => {
  location.search = '?claim=n0nce&lang=ko';
  location.href = 'http://room.test/s/demo?claim=n0nce&lang=ko';
  answers.set('POST /api/notify/claim', { status: 200, body: { screening: 'demo', token: tokenC } });
  const made = FakeWebSocket.made.length;
  assert.equal(await claimPlace('n0nce'), true);
  assert.deepEqual(lastRequest('/api/notify/claim'), { method: 'POST', path: '/api/notify/claim', body: { claim: 'n0nce' } });
  assert.equal(stored().token, tokenC);
  assert.deepEqual(replaced.at(-1), '/s/demo?lang=ko', 'the claim leaves the address bar, the rest stays');
  assert.equal(FakeWebSocket.made.length, made + 1);
  const ws = opened();
  assert.equal(ws.url, 'ws://room.test/ws/screenings/demo?auth=message', 'the token is never in a URL');
  assert.deepEqual(ws.sent, [{ type: 'hello', token: tokenC }]);
  const expires = new Date(Date.now() + 5 * 60000).toISOString();
  ws.receive({ type: 'offered', token: tokenC, pass: 'eyJ.claimed', seats: 1, expires_at: expires });
  assert.equal(st.phase, 'admitted');
  assert.equal(el.admittedHeading.textContent, 'Seats came back: you may book 1 seat');
  answers.delete('POST /api/notify/claim');
});

test('a refused link (410 LINK_USED): said in words, the claim out of the address, nothing connects until "Join the line"', async () => {
  setStore({});
  save();
  location.search = '?claim=used';
  location.href = 'http://room.test/s/demo?claim=used';
  answers.set('POST /api/notify/claim', { status: 410, body: { error: { code: 'LINK_USED', message: 'used' } } });
  const made = FakeWebSocket.made.length;
  assert.equal(await claimPlace('used'), false);
  assert.equal(st.phase, 'final');
  assert.equal(st.finalKind, 'link_used');
  assert.equal(el.finalText.textContent, 'This link was already used. Open the room from the device where you first joined, or join again.');
  assert.equal(replaced.at(-1), '/s/demo');
  assert.equal(el.rejoin.hidden, false);
  assert.equal(el.rejoin.textContent, 'Join the line');
  tick(60000);
  assert.equal(FakeWebSocket.made.length, made, 'no socket until the buyer asks');

  rejoin(!keepsToken(st.finalKind)); // the button
  assert.equal(FakeWebSocket.made.length, made + 1);
  assert.deepEqual(opened().sent, [{ type: 'hello' }], 'a newcomer');
  answers.delete('POST /api/notify/claim');
});

test('the other refusals of a link: 410 LINK_EXPIRED, 404 LINK_UNKNOWN; a server that does not answer keeps the claim to try again', async () => {
  // A second click on the e-mail's link, in the browser that keeps the place: the way back to it.
  setStore({ token: tokenC });
  save();
  location.search = '?claim=again';
  answers.set('POST /api/notify/claim', { status: 410, body: { error: { code: 'LINK_USED', message: 'used' } } });
  assert.equal(await claimPlace('again'), false);
  assert.equal(el.rejoin.textContent, 'Back to my place');
  assert.equal(stored().token, tokenC, 'a refused link drops no place');
  rejoin(!keepsToken(st.finalKind));
  assert.deepEqual(opened().sent, [{ type: 'hello', token: tokenC }]);

  for (const [status, code, kind] of [[410, 'LINK_EXPIRED', 'link_expired'], [404, 'LINK_UNKNOWN', 'link_unknown']]) {
    location.search = '?claim=x';
    answers.set('POST /api/notify/claim', { status, body: { error: { code, message: 'no' } } });
    assert.equal(await claimPlace('x'), false);
    assert.equal(st.finalKind, kind);
    assert.equal(el.finalTitle.textContent, t(`final.${kind}.h`));
  }
  answers.delete('POST /api/notify/claim'); // the fakes answer 503
  location.search = '?claim=later';
  location.href = 'http://room.test/s/demo?claim=later';
  const n = replaced.length;
  assert.equal(await claimPlace('later'), false);
  assert.equal(st.finalKind, 'link_error');
  assert.equal(replaced.length, n, 'the claim stays in the address for a reload');
});
