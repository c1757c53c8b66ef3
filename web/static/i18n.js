// i18n.js: the page's language: strings by key (their text is in i18n/en.js and i18n/ko.js), number,
// ordinal and date formatting, and the language switch.
// The language comes from a choice the user made before (localStorage), else from the browser's languages.
// The pages import t, num, ordinal, dateTime, clockTime, countdown, locale and onChange; importing the module also fills the
// page's [data-i18n] elements and wires the language switch.

import { en } from './i18n/en.js';
import { ko } from './i18n/ko.js';

const STORE_KEY = 'waitroom:lang';

// The strings of each language, by key. A string takes {name} placeholders; a function gets the placeholder
// values as an object.
const dict = { en, ko };

function stored() {
  try {
    const s = localStorage.getItem(STORE_KEY);
    return s && dict[s] ? s : '';
  } catch (_) {
    return '';
  }
}

// fromBrowser picks the first of the browser's languages that has strings, else English.
function fromBrowser() {
  const langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en'];
  for (const l of langs) {
    const base = String(l).toLowerCase().split('-')[0];
    if (dict[base]) return base;
  }
  return 'en';
}

let lang = stored() || fromBrowser();
const listeners = [];

export function locale() { return lang === 'ko' ? 'ko-KR' : 'en-US'; }

export function t(key, vars) {
  let s = dict[lang][key];
  if (s === undefined) s = dict.en[key];
  if (s === undefined) return key;
  if (typeof s === 'function') return s(vars || {});
  return s.replace(/\{(\w+)\}/g, (m, k) => (vars && k in vars ? String(vars[k]) : m));
}

export function num(n) { return new Intl.NumberFormat(locale()).format(n); }

// ordinal is "1st", "2nd", "3rd", "11th", "1,234th" in English and "1,234번째" in Korean.
export function ordinal(n) {
  const s = num(n);
  if (lang === 'ko') return s + '번째';
  const mod100 = n % 100;
  const mod10 = n % 10;
  let suffix = 'th';
  if (mod100 < 11 || mod100 > 13) {
    if (mod10 === 1) suffix = 'st';
    else if (mod10 === 2) suffix = 'nd';
    else if (mod10 === 3) suffix = 'rd';
  }
  return s + suffix;
}

// Times, the same on every page (room, checkout, ticket, control room), one format per language and always
// with the time zone, since a buyer and the operator may be in different ones: dateTime for a day and a time
// ("Dec 2, 2026, 3:01 AM UTC"; with style 'long' the weekday too), clockTime for a time of day to the second,
// as of a hold that runs out within minutes ("3:01:18 AM UTC"), countdown for the time left. Each takes an
// RFC 3339 string, a Date or milliseconds, and gives '' for none.
const timeFormats = {
  medium: { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' },
  long: { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' },
  clock: { hour: 'numeric', minute: '2-digit', second: '2-digit', timeZoneName: 'short' },
};

function formatTime(v, format) {
  if (v === undefined || v === null || v === '' || v === 0) return '';
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) return '';
  return new Intl.DateTimeFormat(locale(), timeFormats[format]).format(d);
}

export const dateTime = (v, style) => formatTime(v, style === 'long' ? 'long' : 'medium');

export const clockTime = (v) => formatTime(v, 'clock');

// countdown writes the time left, ms rounded up to the second, as mm:ss ("02:00"), or h:mm:ss from an hour
// up: the one countdown format of every page.
export function countdown(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const mm = String(Math.floor((total % 3600) / 60)).padStart(2, '0');
  const ss = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${mm}:${ss}` : `${mm}:${ss}`;
}

// apply fills every [data-i18n] element with its string and sets the document's language.
function apply(root) {
  document.documentElement.lang = lang;
  (root || document).querySelectorAll('[data-i18n]').forEach((el) => { el.textContent = t(el.dataset.i18n); });
  const sw = document.getElementById('lang-switch');
  if (sw) {
    const other = lang === 'ko' ? 'en' : 'ko';
    sw.textContent = dict[other].langName;
    sw.lang = other;
    sw.title = dict[lang].langSwitch + ' / ' + dict[other].langSwitch;
    sw.setAttribute('aria-label', dict[other].langSwitch + ': ' + dict[other].langName);
  }
}

function set(l) {
  if (!dict[l]) return;
  lang = l;
  try { localStorage.setItem(STORE_KEY, l); } catch (_) { /* private mode: the choice lasts this page */ }
  apply(document);
  listeners.forEach((f) => f(lang));
}

export function onChange(f) { listeners.push(f); }

// Module scripts run once the document is parsed, so the switch and the [data-i18n] elements are there.
const sw = document.getElementById('lang-switch');
if (sw) sw.addEventListener('click', () => set(lang === 'ko' ? 'en' : 'ko'));
apply(document);
