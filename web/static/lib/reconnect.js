// reconnect.js: when a lost connection is tried again: exponential backoff with jitter and a cap, and the one
// retry that is pending. The waiting room uses it for its WebSocket, the control room for its event stream;
// each passes its own timings and decides itself when the connection counts as back (reset).

export class Reconnect {
  // The n-th retry since the last reset waits between half and all of min(capMs, baseMs × 2^n): the cap keeps a
  // long outage from making the wait absurd, the random half spreads the clients that lost the same server.
  constructor({ baseMs, capMs }) {
    this.baseMs = baseMs;
    this.capMs = capMs;
    this.attempt = 0; // retries since the connection last counted as back
    this.atMs = 0; // when the pending retry runs (Date.now() time), 0 when none is pending
    this.timer = 0;
  }

  // backoff returns the wait before the next retry and counts the retry.
  backoff() {
    const ceil = Math.min(this.capMs, this.baseMs * 2 ** this.attempt);
    this.attempt++;
    return ceil / 2 + Math.random() * (ceil / 2);
  }

  // reset: the connection is back, so the next loss starts from baseMs again.
  reset() {
    this.attempt = 0;
  }

  // atLeast makes the next wait at least steps doublings long (the server asked to come back later).
  atLeast(steps) {
    this.attempt = Math.max(this.attempt, steps);
  }

  // schedule calls retry after delayMs, in place of any retry already pending.
  schedule(delayMs, retry) {
    clearTimeout(this.timer);
    this.atMs = Date.now() + delayMs;
    this.timer = setTimeout(retry, delayMs);
  }

  // cancel drops the pending retry, if any.
  cancel() {
    clearTimeout(this.timer);
    this.timer = 0;
    this.atMs = 0;
  }

  // secondsLeft is the time to the pending retry in whole seconds, rounded up, for a countdown on the page;
  // 0 when none is pending.
  secondsLeft() {
    return this.atMs ? Math.max(0, Math.ceil((this.atMs - Date.now()) / 1000)) : 0;
  }
}
