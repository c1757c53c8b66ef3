// entry.js: what a new place may need before its socket connects, when the screening asks for it
// (pow_cost and code_required in GET /api/screenings/{id}): an access code the visitor types, and a proof
// of work the widget solves (pow.js); the view that asks for them; and the refusals of the socket
// (POW_REQUIRED, POW_INVALID, CODE_REQUIRED, CODE_INVALID, CODE_USED) that bring the page back to it.
//
// A token that already has its place needs neither: the page connects with it first, and comes here only
// when the server refuses. A solution is sent once, on one connect; the code goes with every connect until
// the line has welcomed the socket. A refusal loses nothing else: the token stays, and so does what the
// visitor typed, to correct.

import { t } from '../i18n.js';
import { announce } from './announce.js';
import { el } from './dom.js';
import { onExpired, onFailed, onSolved, solve } from './pow.js';
import { render } from './render.js';
import { restart, stop } from './socket.js';
import { st, store } from './state.js';

let needCode = false; // this entry asks for a code
let needPow = false; // this entry asks for a proof of work
let code = ''; // the code the visitor gave, normalised; sent until the line welcomes the socket
let payload = ''; // a solution not sent yet

// codeChars normalises what the visitor typed: codes are matched upper-cased, without "-" and spaces.
function codeChars(s) {
  return String(s).toUpperCase().replace(/[\s-]+/g, '');
}

// asksCode: the screening asks for an access code.
function asksCode() {
  return Boolean(st.info && st.info.code_required === true);
}

// asksPow: the screening asks for a proof of work.
function asksPow() {
  return Boolean(st.info && st.info.pow_cost > 0);
}

// needsEntry: a page without a token that the screening asks a code or a proof of work of.
function needsEntry() {
  if (store.token) return false;
  return asksPow() || asksCode();
}

// entryHello is what the next connect adds to the socket's hello: the code, and a solution not sent yet,
// which it takes, so that no solution is sent twice.
export function entryHello() {
  const extra = {};
  if (code) extra.code = code;
  if (payload) extra.altcha = payload;
  payload = '';
  return extra;
}

// welcomed: the line took the socket (queued, prequeue or admitted); the code has done its work.
export function welcomed() {
  code = '';
}

// beginEntry stops the socket and shows the entry view with what the screening asks for; it connects
// once everything asked for is there.
function beginEntry() {
  needCode = needCode || asksCode();
  needPow = needPow || asksPow();
  stop();
  const was = st.phase;
  st.phase = 'entry';
  render();
  el.codeForm.hidden = !needCode;
  el.pow.hidden = !needPow;
  if (needPow && !payload) startSolve();
  renderEntry();
  // Focus goes where the visitor has something to do: the code's field, else the view's heading.
  if (needCode && !code) requestAnimationFrame(() => el.codeInput.focus());
  else if (was !== 'entry') requestAnimationFrame(() => el.entryHeading.focus());
}

// enterOrConnect starts a new place: through the entry view when the screening asks for one, else at once.
export function enterOrConnect() {
  if (needsEntry()) beginEntry();
  else restart();
}

// refused reads a refusal of the socket; it returns false for codes that are not about the entry.
export function refused(reason) {
  switch (reason) {
    case 'POW_REQUIRED':
    case 'POW_INVALID':
      needPow = true;
      st.powNote = reason === 'POW_INVALID' ? 'pow.again' : '';
      break;
    case 'CODE_REQUIRED':
    case 'CODE_INVALID':
    case 'CODE_USED':
      needCode = true;
      // A solution sent with the refused code was sent once already: the next try solves again.
      st.codeError = 'code.' + reason;
      code = '';
      break;
    default:
      return false;
  }
  beginEntry();
  if (st.codeError) announce(t(st.codeError));
  return true;
}

// submitCode takes the code the visitor typed.
export function submitCode() {
  const c = codeChars(el.codeInput.value);
  if (!c) {
    st.codeError = 'code.empty';
    renderEntry();
    el.codeInput.focus();
    return;
  }
  code = c;
  st.codeError = '';
  renderEntry();
  join();
}

function startSolve() {
  st.powState = 'solving';
  solve(el.powSlot).catch(() => {
    st.powState = 'failed';
    renderEntry();
  });
}

onSolved((p) => {
  if (st.phase !== 'entry') return; // a solve that ends after the page left the entry is not needed
  payload = p;
  st.powState = 'solved';
  st.powNote = '';
  renderEntry();
  join();
});
onFailed(() => {
  st.powState = 'failed';
  renderEntry();
});
// A solution that waited past its challenge's lifetime (the visitor still typing the code) is no good.
onExpired(() => {
  if (st.phase !== 'entry') return;
  payload = '';
  startSolve();
  renderEntry();
});

// join connects once what the entry asks for is there.
function join() {
  if (st.phase !== 'entry') return;
  if ((needCode && !code) || (needPow && !payload)) return;
  needCode = false;
  needPow = false;
  st.powState = '';
  st.phase = 'connecting';
  render();
  restart();
}

// retrySolve is the view's "Try again" after a failed solve.
export function retrySolve() {
  startSolve();
  renderEntry();
}

// renderEntry draws the entry view: the code's field and its error, the proof of work's state.
export function renderEntry() {
  if (st.phase !== 'entry') return;
  el.codeError.textContent = st.codeError ? t(st.codeError) : '';
  el.codeError.hidden = !st.codeError;
  el.codeInput.setAttribute('aria-invalid', st.codeError ? 'true' : 'false');
  let status = '';
  if (st.powState === 'solving') status = t(st.powNote || 'pow.solving');
  else if (st.powState === 'failed') status = t('pow.failed');
  else if (st.powState === 'solved') status = needCode && !code ? t('pow.solvedNeedCode') : t('pow.solved');
  if (el.powStatus.textContent !== status) el.powStatus.textContent = status;
  el.powStatus.dataset.state = st.powState;
  el.powRetry.hidden = st.powState !== 'failed';
}
