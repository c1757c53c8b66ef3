// fakes.js: the browser the waiting room's modules expect, as little of it as they touch, so that
// the tests can import the real modules under Node: a document whose elements keep what the page writes
// (text, hidden, data-*, attributes, children), localStorage, location, history, navigator, fetch answered
// by the test, requestAnimationFrame, timers that run only when the test ticks them, and a WebSocket the
// test opens, feeds and closes by hand. Imported before any page module, because the modules read the page
// when they load (dom.js looks its elements up once). Plain Node 18 or later: no package, no experimental
// API.

// FakeElement is an element that remembers what the page sets on it.
export class FakeElement {
  constructor(tag = 'div', selector = '') {
    this.tagName = tag.toUpperCase();
    this.selector = selector; // what the page looked it up by, to read a failure
    this.hidden = false;
    this.textContent = '';
    this.value = '';
    this.disabled = false;
    this.open = false; // a <dialog>
    this.dataset = {};
    this.style = {
      setProperty(k, v) { this[k] = String(v); },
      removeProperty(k) { delete this[k]; },
    };
    this.attributes = new Map();
    this.children = [];
    this.listeners = new Map();
    const classes = new Set();
    this.classList = {
      add: (...c) => c.forEach((x) => classes.add(x)),
      remove: (...c) => c.forEach((x) => classes.delete(x)),
      toggle: (c, on = !classes.has(c)) => { if (on) classes.add(c); else classes.delete(c); return on; },
      contains: (c) => classes.has(c),
    };
  }

  setAttribute(k, v) { this.attributes.set(k, String(v)); }
  getAttribute(k) { return this.attributes.has(k) ? this.attributes.get(k) : null; }
  hasAttribute(k) { return this.attributes.has(k); }
  removeAttribute(k) { this.attributes.delete(k); }
  toggleAttribute(k, on = !this.attributes.has(k)) { if (on) this.attributes.set(k, ''); else this.attributes.delete(k); return on; }
  append(...nodes) { this.children.push(...nodes); }
  appendChild(node) { this.children.push(node); return node; }
  prepend(...nodes) { this.children.unshift(...nodes); }
  replaceChildren(...nodes) { this.children = nodes; }
  remove() {}
  focus() { document.activeElement = this; }
  blur() {}
  scrollIntoView() {}
  addEventListener(type, f) { this.listeners.set(type, f); }
  removeEventListener(type) { this.listeners.delete(type); }
  querySelector() { return null; }
  querySelectorAll() { return []; }
  closest() { return null; }
  showModal() { this.open = true; }
  close() { this.open = false; }
  submit() { submitted.push(this); }
  getBoundingClientRect() { return { top: 0, left: 0, right: 0, bottom: 0, width: 0, height: 0 }; }
  get options() { return this.children; } // a <select>'s
  get scrollWidth() { return 0; }
  get clientWidth() { return 0; }
}

// elements are the page's elements by the selector the page looked them up with.
const elements = new Map();

// submitted are the forms the page posted (the way back to a site behind the gate).
export const submitted = [];

globalThis.document = {
  title: '',
  hidden: false,
  activeElement: null,
  documentElement: new FakeElement('html'),
  head: new FakeElement('head'),
  body: new FakeElement('body'),
  querySelector(sel) {
    if (!elements.has(sel)) elements.set(sel, new FakeElement('div', sel));
    return elements.get(sel);
  },
  querySelectorAll() { return []; },
  getElementById(id) { return this.querySelector('#' + id); },
  createElement(tag) { return new FakeElement(tag); },
  addEventListener() {},
};

// storage is localStorage's contents.
export const storage = new Map();
globalThis.localStorage = {
  getItem: (k) => (storage.has(k) ? storage.get(k) : null),
  setItem: (k, v) => { storage.set(k, String(v)); },
  removeItem: (k) => { storage.delete(k); },
};

// The room of screening "demo", opened from the list (no ?to=, so no gate).
globalThis.location = {
  protocol: 'http:',
  host: 'room.test',
  pathname: '/s/demo',
  search: '',
  href: 'http://room.test/s/demo',
};
Object.defineProperty(globalThis, 'navigator', {
  value: { onLine: true, languages: ['en-US'], language: 'en-US' },
  configurable: true,
  writable: true,
});
globalThis.window = globalThis;

// replaced are the addresses the page put in place of its own (history.replaceState), each as its path,
// query and fragment; the fake location follows them.
export const replaced = [];
globalThis.history = {
  state: null,
  replaceState(state, _title, url) {
    const u = new URL(url, location.href);
    this.state = state;
    location.pathname = u.pathname;
    location.search = u.search;
    location.href = u.href;
    replaced.push(u.pathname + u.search + u.hash);
  },
};

// The page's timers (a reconnect's wait, an announcement's delay) run when the test calls tick, in the order
// they are due, never on the wall clock: a test says how long passes, and nothing it did not tick happens.
let clockMs = 0;
let lastTimer = 0;
const timers = new Map(); // id → {atMs, f}
globalThis.setTimeout = (f, ms = 0, ...args) => {
  timers.set(++lastTimer, { atMs: clockMs + Math.max(0, Number(ms) || 0), f: () => f(...args) });
  return lastTimer;
};
globalThis.clearTimeout = (id) => { timers.delete(id); };
globalThis.requestAnimationFrame = (f) => setTimeout(f, 0);

// tick lets ms pass on the page's timers, running each that falls due.
export function tick(ms) {
  const endMs = clockMs + ms;
  for (;;) {
    let next = null;
    for (const [id, tm] of timers) {
      if (tm.atMs <= endMs && (!next || tm.atMs < next.atMs)) next = { id, ...tm };
    }
    if (!next) break;
    timers.delete(next.id);
    clockMs = next.atMs;
    next.f();
  }
  clockMs = endMs;
}

// fetched are the paths the page asked for, and requests each request whole: {method, path, body}, the body
// parsed from its JSON. answers holds the test's replies ({status, body}) by "METHOD path" or by path for
// any method; 503 with no body unless the test set one.
export const fetched = [];
export const requests = [];
export const answers = new Map();
globalThis.fetch = async (path, init = {}) => {
  fetched.push(String(path));
  const method = String(init.method || 'GET').toUpperCase();
  let body = init.body === undefined ? null : init.body;
  try {
    if (typeof body === 'string') body = JSON.parse(body);
  } catch (_) { /* kept as the text it was */ }
  requests.push({ method, path: String(path), body });
  const a = answers.get(`${method} ${path}`) || answers.get(String(path)) || { status: 503, body: null };
  return {
    ok: a.status >= 200 && a.status < 300,
    status: a.status,
    headers: { get: () => null },
    json: async () => a.body,
  };
};

// FakeWebSocket is a socket the test drives: open() runs the page's onopen, receive(m) hands it one server
// message as JSON, closeFromServer(code) closes it as the server would. sent holds what the page sent, parsed.
export class FakeWebSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;
  static made = [];

  constructor(url) {
    this.url = url;
    this.readyState = FakeWebSocket.CONNECTING;
    this.sent = [];
    this.closedWith = null; // the code the page closed it with
    this.onopen = null;
    this.onmessage = null;
    this.onclose = null;
    FakeWebSocket.made.push(this);
  }

  send(data) {
    if (this.readyState !== FakeWebSocket.OPEN) throw new Error('send on a socket that is not open');
    this.sent.push(JSON.parse(data));
  }

  close(code) {
    this.closedWith = code;
    this.readyState = FakeWebSocket.CLOSED;
  }

  open() {
    this.readyState = FakeWebSocket.OPEN;
    if (this.onopen) this.onopen({});
  }

  receive(m) {
    if (this.onmessage) this.onmessage({ data: JSON.stringify(m) });
  }

  closeFromServer(code) {
    this.readyState = FakeWebSocket.CLOSED;
    if (this.onclose) this.onclose({ code });
  }

  // last is the newest socket the page made.
  static last() {
    return FakeWebSocket.made[FakeWebSocket.made.length - 1];
  }
}
globalThis.WebSocket = FakeWebSocket;
