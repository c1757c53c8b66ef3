// stream.js: the live figures, GET /api/admin/stream: server-sent events of one JSON frame a second, read
// with fetch so that the request carries the key, reopened with backoff and jitter (lib/reconnect.js) when it
// ends or falls silent for staleMs. Each frame replaces the list of screenings and adds to their history.

import { forgetGone, record } from './history.js';
import { render, renderStream } from './render.js';
import { sseParser } from './sse.js';
import { holdMerged, st, streamRetry } from './state.js';

// staleMs: a stream that sent nothing for this long (frames come every second) is dropped and reopened.
const staleMs = 10000;

let streamCtl = null; // the AbortController of the open stream
let watchdog = 0; // aborts a stream silent for staleMs
let refused = () => {}; // told of a 401 or a 404 (session.js, set by main.js)

// onRefused sets what happens when the server refuses the stream: 401 (a wrong key) or 404 (the admin API
// is off); it is told the status.
export function onRefused(f) {
  refused = f;
}

// openStream opens the stream in place of the current one, if there is a key.
export async function openStream() {
  stopStream();
  if (!st.key) return;
  const ctl = new AbortController();
  streamCtl = ctl;
  setStream(streamRetry.attempt > 0 ? 'reconnecting' : 'connecting');
  let res;
  try {
    res = await fetch('/api/admin/stream', {
      headers: { Authorization: 'Bearer ' + st.key, Accept: 'text/event-stream' },
      cache: 'no-store',
      signal: ctl.signal,
    });
  } catch (_) {
    if (streamCtl === ctl) streamLater();
    return;
  }
  if (streamCtl !== ctl) {
    ctl.abort();
    return;
  }
  if (res.status === 401 || res.status === 404) {
    refused(res.status);
    return;
  }
  if (!res.ok || !res.body) {
    streamLater();
    return;
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parser = sseParser((type, data) => {
    if (streamCtl !== ctl) return;
    armWatchdog(ctl);
    onEvent(type, data);
  });
  armWatchdog(ctl);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || streamCtl !== ctl) break;
      parser.push(decoder.decode(value, { stream: true }));
    }
  } catch (_) { /* aborted (silent too long, or stopped) or the network went */ }
  if (streamCtl === ctl) {
    streamCtl = null;
    streamLater();
  }
}

// stopStream closes the stream and drops any pending reopening.
export function stopStream() {
  streamRetry.cancel();
  clearTimeout(watchdog);
  if (streamCtl) {
    const ctl = streamCtl;
    streamCtl = null;
    ctl.abort();
  }
}

function armWatchdog(ctl) {
  clearTimeout(watchdog);
  watchdog = setTimeout(() => {
    if (streamCtl === ctl) ctl.abort(); // the read fails, and the stream is reopened
  }, staleMs);
}

// streamLater reopens the stream after the backoff, while the console is shown.
function streamLater() {
  clearTimeout(watchdog);
  if (st.view !== 'console') return;
  streamRetry.schedule(streamRetry.backoff(), openStream);
  setStream('reconnecting');
}

function setStream(s) {
  st.stream = s;
  renderStream();
}

// onEvent reads one event: "error" carries the server's message about the stream, "message" a frame.
function onEvent(type, data) {
  if (type === 'error') {
    let text = data;
    try {
      const v = JSON.parse(data);
      if (typeof v === 'string') text = v;
    } catch (_) { /* not JSON: show it as it is */ }
    st.streamProblem = text;
    renderStream();
    return;
  }
  if (type !== 'message') return;
  let frame;
  try {
    frame = JSON.parse(data);
  } catch (_) {
    return;
  }
  onFrame(frame);
}

// onFrame takes a frame's screenings and instances; a frame means the stream is back.
function onFrame(f) {
  if (!f || typeof f !== 'object' || !Array.isArray(f.screenings)) return;
  streamRetry.reset();
  st.streamProblem = '';
  const atMs = Number(f.at) > 0 ? Number(f.at) : Date.now();
  st.lastAtMs = atMs;
  st.screenings = f.screenings.filter((s) => s && typeof s.id === 'string');
  st.instances = (Array.isArray(f.instances) ? f.instances : []).filter((x) => x && typeof x.id === 'string');
  // The e-mail notices' figures, should the server give them for the whole frame rather than per screening.
  st.notifications = f.notifications && typeof f.notifications === 'object' ? f.notifications : null;
  for (const s of st.screenings) record(s, atMs);
  holdMerged();
  forgetGone();
  st.stream = 'open';
  render();
}

// pageShown: a page restored from the back-forward cache has lost its stream.
export function pageShown(e) {
  if (e.persisted && st.view === 'console' && !streamCtl) openStream();
}
