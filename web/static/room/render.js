// render.js: draws the page from st and store: the view of the phase, the connection line, the place in
// line, the countdowns, the choice of seats (an offer's, with its limit), the question before leaving, the
// booking and the final states; waitlist.js draws the waitlist's view and the party size, and notify.js the
// e-mail notice, when called from here. It changes no state.

import { t, num, ordinal, dateTime, clockTime, countdown, locale } from '../i18n.js';
import { el } from './dom.js';
import { seatOrder, sortedSeats } from '../lib/seats.js';
import { renderNotify } from './notify.js';
import { finalKey, renderSite, siteName } from './site.js';
import { maxSeats, offerSeats, retry, serverNow, st, store } from './state.js';
import { renderParty, renderWaitlist } from './waitlist.js';

// lowTimeMs is when the countdown of the pass turns to a warning.
export const lowTimeMs = 60000;

// render draws the whole page from the state; the code that changes the state calls it.
// toSiteNotice says the page is taking an admitted visitor back to the site behind the gate (gate.js); made
// when first needed, so a page without a gate has none.
let toSiteNotice = null;

function renderToSite() {
  if (!st.toSite && !toSiteNotice) return;
  if (!toSiteNotice) {
    toSiteNotice = document.createElement('p');
    toSiteNotice.className = 'notice';
    toSiteNotice.setAttribute('role', 'status');
    toSiteNotice.dataset.testid = 'gate-back';
    el.main.prepend(toSiteNotice);
  }
  toSiteNotice.hidden = !st.toSite;
  toSiteNotice.textContent = st.toSite ? t('gate.back', { site: siteName() }) : '';
}

export function render() {
  const p = st.phase;
  el.main.dataset.phase = p;
  el.entry.hidden = p !== 'entry';
  el.prequeue.hidden = p !== 'prequeue';
  el.waiting.hidden = p !== 'waiting';
  el.waitlist.hidden = p !== 'waitlist';
  el.admitted.hidden = p !== 'admitted' || st.toSite;
  el.confirmed.hidden = p !== 'confirmed';
  el.final.hidden = p !== 'final';
  if (el.leaveDialog.open && p !== 'waiting' && p !== 'prequeue' && p !== 'waitlist') el.leaveDialog.close();
  renderLeave(false);

  const name = st.info && st.info.name ? st.info.name : t('roomTitle');
  el.name.textContent = name;
  el.when.textContent = st.info ? t('startsAt', { time: dateTime(st.info.starts_at) }) : '';

  renderConn();
  const showPaused = st.paused && (p === 'waiting' || p === 'prequeue');
  el.pausedNotice.hidden = !showPaused;
  el.pausedText.textContent = showPaused ? t('pausedNotice') : '';
  if (p === 'prequeue') renderPrequeue();
  if (p === 'waiting') renderWaiting();
  if (p === 'waitlist') renderWaitlist();
  renderParty();
  renderNotify();
  if (p === 'admitted') renderAdmitted();
  renderToSite();
  renderSite();
  if (p === 'confirmed') renderConfirmed();
  if (p === 'final') renderFinal();

  if (p === 'waiting' && st.rank) document.title = t('title.waiting', { rank: ordinal(st.rank), name });
  else if (p === 'prequeue') document.title = t('title.prequeue', { name });
  else if (p === 'waitlist') document.title = t('title.waitlist', { name });
  else if (p === 'admitted' && offerSeats()) document.title = t('title.offered', { name });
  else if (p === 'admitted') document.title = t('title.admitted', { name });
  else document.title = name + ' · waitroom';
}

// renderConn draws the connection line; the tick calls it alone to count down to the next retry.
export function renderConn() {
  const c = st.conn;
  el.conn.hidden = st.phase === 'confirmed' || st.phase === 'final' || st.phase === 'entry';
  el.conn.dataset.conn = c;
  let text;
  if (c === 'reconnecting') {
    text = t('conn.reconnecting', { s: retry.secondsLeft() });
  } else {
    text = t('conn.' + c);
  }
  if (el.connText.textContent !== text) el.connText.textContent = text;
  el.retryNow.hidden = !((c === 'reconnecting' && retry.atMs) || c === 'offline');
}

function renderWaiting() {
  el.placePre.textContent = t('placePre');
  el.placeMid.textContent = t('placeMid');
  el.placePost.textContent = t('placePost');
  if (st.rank) {
    el.rank.textContent = ordinal(st.rank);
    el.rank.dataset.rank = String(st.rank);
    el.total.textContent = num(st.total);
    el.total.dataset.total = String(st.total);
  }
  // How far the line has moved: the share of the people ahead at arrival who have gone through.
  const start = store.startRank || st.rank || 1;
  const aheadThen = start - 1;
  const aheadNow = Math.max(0, st.rank - 1);
  const pct = aheadThen <= 0 ? 100 : Math.round(((aheadThen - Math.min(aheadNow, aheadThen)) / aheadThen) * 100);
  el.progress.value = pct;
  el.progressText.textContent = st.rank === 1 ? t('progressNext') : t('progress', { p: num(pct) });
  el.waitingNote.textContent = st.note ? t(st.note) : '';
  const eta = st.etaSeconds !== null && !st.paused && !st.allHeld ? etaText(st.etaSeconds) : '';
  el.eta.textContent = eta;
  el.eta.hidden = eta === '';
  el.eta.dataset.etaSeconds = eta === '' ? '' : String(st.etaSeconds);
  // Without an estimate the page says why there is none, rather than nothing: paused (said above), every
  // seat held (said below, with no promise of a time), or the line has not moved since this page came.
  const why = eta !== '' ? '' : st.allHeld ? 'held' : st.paused ? 'paused' : 'none';
  el.etaNone.dataset.why = why;
  el.etaNone.textContent = why === '' ? '' : t('eta.' + why);
  el.etaNone.hidden = why === '';
  el.allHeld.hidden = !st.allHeld;
  // A screening that keeps a waitlist offers what comes back in the line's order (docs/protocol.md 5.4).
  const held = st.info && st.info.waitlist === true ? 'allHeldWaitlist' : 'allHeldNotice';
  el.allHeldText.textContent = st.allHeld ? t(held) : '';
}

// etaText is the wait estimate in words: under a minute, whole minutes, or hours and minutes.
function etaText(seconds) {
  if (seconds < 60) return t('eta.soon');
  const min = Math.round(seconds / 60);
  if (min < 120) return t('eta.minutes', { min });
  return t('eta.hours', { h: num(Math.floor(min / 60)), min: min % 60 });
}

function renderPrequeue() {
  renderCountdown();
  el.opensAt.textContent = st.opensAtMs ? t('opensAt', { time: dateTime(st.opensAtMs) }) : '';
  el.preTotal.textContent = t('prequeueTotal', { n: st.preTotal, total: num(st.preTotal) });
  el.preTotal.dataset.total = String(st.preTotal);
}

// renderCountdown shows the time to the opening by the server's clock (countdown: mm:ss, h:mm:ss from an
// hour up).
export function renderCountdown() {
  const leftMs = st.opensAtMs - serverNow();
  const total = Math.max(0, Math.ceil(leftMs / 1000));
  const h = Math.floor(total / 3600);
  const text = total > 0 ? countdown(leftMs) : t('prequeueOpening');
  if (el.countdown.textContent !== text) el.countdown.textContent = text;
  el.countdown.dateTime = `PT${h}H${Math.floor((total % 3600) / 60)}M${total % 60}S`;
  el.countdown.dataset.opensAt = st.opensAtMs ? String(st.opensAtMs) : '';
  el.countdown.dataset.left = String(total);
  el.countdownLabel.hidden = total === 0;
}

// renderLeave words the question before leaving for the place it gives up: in the line, in the pre-queue or
// on the waitlist; open: the dialog is about to open (else it is drawn only while open, as the language
// changes).
export function renderLeave(open) {
  if (!open && !el.leaveDialog.open) return;
  const p = st.phase;
  const onWaitlist = p === 'waitlist';
  el.leaveTitle.textContent = t(onWaitlist ? 'waitlist.leaveTitle' : 'leaveTitle');
  el.leaveStay.textContent = t(onWaitlist ? 'waitlist.stay' : 'leaveStay');
  el.leaveConfirm.textContent = t(onWaitlist ? 'waitlist.leave' : 'leaveConfirm');
  if (onWaitlist) el.leaveText.textContent = t('waitlist.leaveText');
  else if (p === 'waiting' && st.rank) el.leaveText.textContent = t('leaveText', { rank: ordinal(st.rank) });
  else el.leaveText.textContent = t('leaveTextPre');
}

function renderAdmitted() {
  // An offer of seats that came back says so, with its own limit and countdown; a plain turn, as ever.
  const offer = offerSeats();
  el.admitted.dataset.offer = offer ? 'true' : 'false';
  el.admittedHeading.textContent = offer ? t('offer.heading', { n: maxSeats(), num: num(maxSeats()) }) : t('admittedHeading');
  el.timerLabel.textContent = t(offer ? 'offer.timeLeft' : 'timeLeft');
  el.offerText.hidden = !offer;
  el.offerText.textContent = offer ? t('offer.text') : '';
  renderTimer();
  if (st.seatsState === 'loading' && !st.seats) el.seatsStatus.textContent = t('seatsLoading');
  else if (st.seatsState === 'failed') el.seatsStatus.textContent = t('seatsFailed');
  else el.seatsStatus.textContent = '';
  el.seatsStatus.className = st.seatsState === 'failed' ? 'notice bad' : 'muted small';

  const list = [...st.selected].sort(seatOrder);
  el.selectedText.textContent = list.length
    ? t('selectedList', { list: list.join(', '), n: list.length, max: maxSeats() })
    : t('selectedNone', { max: maxSeats() });
  // The button stays focusable while busy or with nothing chosen (aria-disabled), so focus is never lost
  // with it; its click does nothing then.
  el.reserve.textContent = st.busy ? t('reserving') : t('reserve', { n: list.length });
  el.reserve.setAttribute('aria-disabled', st.busy || list.length === 0 ? 'true' : 'false');
  el.reserve.setAttribute('aria-busy', st.busy ? 'true' : 'false');
  el.message.className = 'notice' + (st.message ? ' ' + st.message.kind : '');
  el.message.textContent = st.message ? st.message.text : '';
  const gone = st.seatChanges ? st.seatChanges.seats : [];
  el.seatChanges.textContent = gone.length ? t('seatsGone', { seats: gone.join(', '), n: gone.length }) : '';
  renderBest();
}

// renderBest fills the choice of how many seats the server picks: 1 to maxSeats, the choice kept.
function renderBest() {
  const max = maxSeats();
  const options = el.bestCount.options;
  if (options.length !== max || el.bestCount.dataset.lang !== locale()) {
    const keep = Number(el.bestCount.value) || Math.min(2, max);
    el.bestCount.replaceChildren(...Array.from({ length: max }, (_, i) => {
      const o = document.createElement('option');
      o.value = String(i + 1);
      o.textContent = t('bestSeats', { n: i + 1, num: num(i + 1) });
      return o;
    }));
    el.bestCount.value = String(Math.min(keep, max));
    el.bestCount.dataset.lang = locale();
  }
  el.bestSubmit.textContent = st.busy ? t('reserving') : t('bestSubmit');
  el.bestSubmit.setAttribute('aria-disabled', st.busy ? 'true' : 'false');
}

// renderTimer shows the time left on the pass (countdown: mm:ss) and turns to a warning under lowTimeMs.
export function renderTimer() {
  const leftMs = Math.max(0, (store.expiresAtMs || 0) - serverNow());
  const total = Math.ceil(leftMs / 1000);
  const text = total > 0 ? countdown(leftMs) : t('timeUp');
  if (el.timer.textContent !== text) el.timer.textContent = text;
  el.timer.dateTime = `PT${Math.floor(total / 60)}M${total % 60}S`;
  el.timerBox.classList.toggle('low', leftMs < lowTimeMs);
}

// renderConfirmed shows the order: booked, with its ticket; or its seats held until a time, with the
// countdown and the way to the checkout; or a hold that ran out or was cancelled.
function renderConfirmed() {
  const r = store.reservation || {};
  const status = ['held', 'expired', 'cancelled'].includes(r.status) ? r.status : 'confirmed';
  el.confirmed.dataset.status = status;
  const seats = sortedSeats(r.seats);
  el.confirmedSeats.replaceChildren(...seats.map((s) => {
    const li = document.createElement('li');
    li.textContent = String(s);
    return li;
  }));
  if (r.code) el.confirmedID.textContent = t('orderCode', { code: r.code });
  else el.confirmedID.textContent = r.id !== undefined && r.id !== null ? t('bookingNo', { id: String(r.id) }) : '';
  el.confirmedFor.textContent = st.info ? t('bookedFor', { name: st.info.name, time: dateTime(st.info.starts_at) }) : '';
  const held = status === 'held';
  const until = held && r.holdExpiresAtMs ? clockTime(r.holdExpiresAtMs) : '';
  el.confirmedTitle.textContent = held ? t('heldHeading', { time: until }) : status === 'confirmed' ? t('confirmedHeading') : t(`order.${status}.h`);
  el.holdBox.hidden = !held || !r.holdExpiresAtMs;
  el.holdText.textContent = held ? t('heldText', { time: until }) : status === 'confirmed' ? '' : t(`order.${status}.p`);
  el.holdText.className = 'notice ' + (held ? 'warn' : 'bad');
  el.checkoutLink.hidden = !(held && r.checkoutUrl);
  if (held && r.checkoutUrl) el.checkoutLink.href = r.checkoutUrl;
  const ticket = r.ticketUrl && (status === 'confirmed' || held);
  el.ticketLink.hidden = !ticket;
  if (ticket) el.ticketLink.href = r.ticketUrl;
  el.ticketLink.textContent = held ? t('orderPage') : t('ticket');
  el.ticketLink.className = 'btn' + (held ? ' secondary' : '');
  if (held) renderHoldTimer();
}

// renderHoldTimer counts down to the end of the hold by the server's clock (countdown: mm:ss, h:mm:ss past
// an hour), as the checkout does.
export function renderHoldTimer() {
  const r = store.reservation || {};
  const leftMs = Math.max(0, (r.holdExpiresAtMs || 0) - serverNow());
  const total = Math.ceil(leftMs / 1000);
  const h = Math.floor(total / 3600);
  const text = total > 0 ? countdown(leftMs) : t('timeUp');
  if (el.holdTimer.textContent !== text) el.holdTimer.textContent = text;
  el.holdTimer.dateTime = `PT${h}H${Math.floor((total % 3600) / 60)}M${total % 60}S`;
  el.holdBox.classList.toggle('low', leftMs < lowTimeMs);
}

function renderFinal() {
  const k = st.finalKind;
  el.final.dataset.kind = k;
  el.finalTitle.textContent = t(finalKey(k, 'h'));
  el.finalText.textContent = t(finalKey(k, 'p'));
  const link = k.startsWith('link_');
  el.rejoin.hidden = !(['expired', 'offer_expired', 'left', 'waitlist_left', 'spent'].includes(k) || link);
  // After a refused link nothing was joined yet: the button connects only when pressed, with the place this
  // browser keeps (a second click on the e-mail's link), else as a new one.
  el.rejoin.textContent = t(!link ? 'rejoin' : store.token ? 'rejoinOwn' : 'rejoinNew');
}
