// pow.js: the proof of work a screening may ask of a new place: the ALTCHA widget (vendor/altcha/), loaded
// the first time a page needs it, so a room without one loads none of it; its PBKDF2 worker; its strings
// in the page's language. solve() has the widget fetch and solve a fresh challenge; onSolved hears the
// payload the socket carries (a payload is good for one place once).

import { onChange } from '../i18n.js';
import { enc } from './state.js';

// The widget's own settings: no footer (a link away from the room), and no record of the visitor's
// pointer and keys (the human-interaction signature, which our server does not ask for).
const widgetConfig = { hideFooter: true, humanInteractionSignature: false };

// workerURL is the key derivation's worker, a classic script beside the widget.
const workerURL = new URL('../vendor/altcha/pbkdf2.js', import.meta.url);

let loading = null; // the widget's modules and style sheet, once asked for
let widget = null; // the <altcha-widget>, once made
let mounted = null; // resolves when the widget has drawn itself and its methods are there
let solved = () => {}; // what gets each payload (entry.js)
let failed = () => {}; // what hears that a solve failed
let expired = () => {}; // what hears that a solved challenge outlived its expiresAt

// load imports the widget (English built in) and its Korean strings, adds its style sheet and registers
// the algorithm our challenges name. A failed load is tried again by the next call.
function load() {
  if (!loading) {
    loading = (async () => {
      const css = document.createElement('link');
      css.rel = 'stylesheet';
      css.href = new URL('../vendor/altcha/altcha.css', import.meta.url).href;
      document.head.append(css);
      await import('../vendor/altcha/altcha.min.js');
      await import('../vendor/altcha/ko.js');
      globalThis.$altcha.algorithms.set('PBKDF2/SHA-256', () => new Worker(workerURL));
    })();
    loading.catch(() => { loading = null; });
  }
  return loading;
}

// language is the widget's language: the page's.
function language() {
  return document.documentElement.lang === 'ko' ? 'ko' : 'en';
}

// place makes the widget in slot (once) and waits until it is ready to verify.
async function place(slot) {
  await load();
  if (!widget) {
    widget = document.createElement('altcha-widget');
    widget.setAttribute('challenge', `/api/screenings/${enc}/challenge`);
    widget.setAttribute('language', language());
    widget.setAttribute('configuration', JSON.stringify(widgetConfig));
    widget.dataset.testid = 'altcha';
    mounted = new Promise((resolve) => widget.addEventListener('load', resolve, { once: true }));
    widget.addEventListener('verified', (e) => solved(String(e.detail && e.detail.payload)));
    widget.addEventListener('statechange', (e) => { if (e.detail && e.detail.state === 'error') failed(); });
    widget.addEventListener('expired', () => expired());
    slot.append(widget);
    onChange(() => widget.setAttribute('language', language()));
  }
  await mounted;
  return widget;
}

// onSolved, onFailed and onExpired set what hears the widget: a payload (from a solve the page started, or
// one the visitor started from the widget's own box after a failure), a failed solve, and a solved
// challenge that outlived its expiresAt before it was sent.
export function onSolved(f) { solved = f; }
export function onFailed(f) { failed = f; }
export function onExpired(f) { expired = f; }

// solve shows the widget in slot and has it fetch and solve a fresh challenge; onSolved hears the payload.
// It rejects only when the widget itself cannot be loaded.
export async function solve(slot) {
  const w = await place(slot);
  w.verify();
}
