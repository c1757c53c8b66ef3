// socket.js: the one WebSocket to /ws/screenings/{id}?auth=message (docs/protocol.md): it connects, says
// hello with the stored token (in the first message, never in the URL, where proxies log it), reconnects
// with backoff after a loss (close code 1012, server restarting: soon; 1013, try later: after a longer
// wait), follows the network and the page (into the back-forward cache and out) going and coming back, and
// hands each message to the handler main.js gives it.
// A connect for a new place adds what the entry asks for to the hello (code, altcha: entry.js), which keeps
// them out of the URL too.
// After a final state (stop) it reconnects no more until the user joins again (restart).

import { t } from '../i18n.js';
import { announce } from './announce.js';
import { render } from './render.js';
import { enc, retry, st, store } from './state.js';

// After 1012 (server restarting) come back soon, spread over a couple of seconds so a whole line of
// sockets does not return at the same instant.
const restartMinMs = 250;
const restartSpreadMs = 2000;
// After 1013 (too slow, try later) wait at least this many backoff steps.
const tryLaterSteps = 2;
// leaveWaitMs is how long a leaving socket may take to be closed by the server before the page closes it.
const leaveWaitMs = 3000;

let ws = null;
let stopped = false; // a final state: no more reconnects
let lostAnnounced = false;
let handle = () => {}; // what reads the server's messages (protocol.js, set by main.js)
let helloExtra = () => ({}); // what a new socket's hello adds: the entry's code and solution (entry.js)
let busyWaitMs = 0; // a BUSY refusal's retry_after_ms, for the close 1013 that follows it

// onMessage sets the handler of the server's messages, each parsed from its JSON.
export function onMessage(f) {
  handle = f;
}

// addToHello sets what each connect adds to the socket's hello (called once per connect, so it may hand
// something over once): an object of the entry's fields, code and altcha, each only when there is one.
export function addToHello(f) {
  helloExtra = f;
}

// socketURL carries no token, code nor solution: they are bearer secrets, and they travel in the hello.
function socketURL() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${location.host}/ws/screenings/${enc}?auth=message`;
}

// sayHello sends the socket's first message: the stored token (none for a new place), and extra, what the
// entry adds.
function sayHello(sock, extra = {}) {
  const hello = store.token ? { type: 'hello', token: store.token, ...extra } : { type: 'hello', ...extra };
  try {
    sock.send(JSON.stringify(hello));
  } catch (_) { /* closed already: onclose reconnects */ }
}

// connect opens a new socket in place of the current one, with the stored token if there is one.
export function connect() {
  retry.cancel();
  if (stopped) return;
  dropSocket();
  if (navigator.onLine === false) {
    setConn('offline');
    return; // the online event connects again
  }
  setConn(retry.attempt > 0 || lostAnnounced ? 'reconnecting' : 'connecting');
  let sock;
  const extra = helloExtra();
  try {
    sock = new WebSocket(socketURL());
  } catch (_) {
    retryLater(retry.backoff());
    return;
  }
  ws = sock;
  sock.onopen = () => {
    if (ws !== sock) return;
    sayHello(sock, extra); // the server reads nothing else first, and registers nothing until it comes
    setConn('open');
  };
  sock.onmessage = (ev) => {
    if (ws !== sock) return;
    let m;
    try {
      m = JSON.parse(ev.data);
    } catch (_) {
      return;
    }
    // A refusal ("error", then a close) does not count as being back: the backoff keeps growing.
    if (!m || m.type !== 'error') retry.reset();
    if (lostAnnounced && m && m.type !== 'error') {
      lostAnnounced = false;
      announce(t('announce.back'));
    }
    handle(m);
  };
  sock.onclose = (ev) => {
    if (ws !== sock) return;
    ws = null;
    onClosed(ev);
  };
}

// dropSocket forgets the current socket without reacting to its close.
export function dropSocket() {
  if (!ws) return;
  const old = ws;
  ws = null;
  try {
    old.close(1000);
  } catch (_) { /* already closing */ }
}

// busyFor takes the wait a BUSY refusal asked for (its retry_after_ms), for the close that follows it.
export function busyFor(ms) {
  busyWaitMs = Math.max(0, Number(ms) || 0);
}

function onClosed(ev) {
  const busy = busyWaitMs;
  busyWaitMs = 0;
  if (stopped) {
    setConn('closed');
    return;
  }
  let delay;
  if (ev.code === 1012) {
    delay = restartMinMs + Math.random() * restartSpreadMs;
  } else if (ev.code === 1013 && busy > 0) {
    // The server was too busy to register the socket and said when to come back: then, spread over as
    // long again, so the refused do not all return at the same instant. The token keeps its place.
    delay = busy + Math.random() * busy;
  } else if (ev.code === 1013) {
    retry.atLeast(tryLaterSteps);
    delay = retry.backoff();
  } else {
    delay = retry.backoff();
  }
  if (!lostAnnounced) {
    lostAnnounced = true;
    announce(t('announce.lost'));
  }
  retryLater(delay);
}

// retryLater connects again after delayMs, counting down on the page meanwhile.
export function retryLater(delayMs) {
  retry.schedule(delayMs, connect);
  setConn('reconnecting');
}

export function setConn(c) {
  st.conn = c;
  render();
}

// stop: the page reached a final state; no reconnects follow until restart.
export function stop() {
  stopped = true;
  retry.cancel();
}

export function isStopped() {
  return stopped;
}

// restart connects again after a final state, with the backoff from the start.
export function restart() {
  stopped = false;
  retry.reset();
  connect();
}

// sendIfOpen sends m on the socket if it is open.
export function sendIfOpen(m) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
}

// sayLeaving tells the server that this token leaves the line. The server answers {"type":"leave"} by
// closing the socket; the page closes it itself after leaveWaitMs.
export function sayLeaving() {
  const sock = ws && ws.readyState === WebSocket.OPEN ? ws : null;
  if (sock) {
    sock.send(JSON.stringify({ type: 'leave' }));
    setTimeout(() => sock.close(1000), leaveWaitMs);
  } else if (store.token) {
    // Not connected just now: connect once to say so, so the place does not hold up the line.
    const once = new WebSocket(socketURL());
    once.onopen = () => sayHello(once);
    once.onmessage = () => {
      once.onmessage = null;
      try {
        once.send(JSON.stringify({ type: 'leave' }));
      } catch (_) { /* closed already */ }
      setTimeout(() => once.close(1000), leaveWaitMs);
    };
  }
}

// reconnectNow is the "Reconnect now" button: it skips the rest of the wait.
export function reconnectNow() {
  if (!stopped) connect();
}

// online: the network is back; connect at once, with the backoff from the start.
export function online() {
  if (!stopped && !ws) {
    retry.reset();
    connect();
  }
}

// offline: no retry can succeed; wait for the online event instead.
export function offline() {
  if (!stopped && !ws) {
    retry.cancel();
    setConn('offline');
  }
}

// pageShown: a page restored from the back-forward cache has lost its socket.
export function pageShown(e) {
  if (e.persisted && !stopped && !ws) connect();
}

// pageHidden: a page put in the back-forward cache lets its socket go, which the browser may keep open: to
// the server the buyer has then left the page (the place stays for the grace, or until its turn is mailed
// when it left an address), and a turn is not handed to a page nobody sees. pageShown connects again.
export function pageHidden(e) {
  if (!e.persisted) return;
  retry.cancel();
  dropSocket();
}
