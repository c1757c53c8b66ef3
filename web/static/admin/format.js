// format.js: how the control room reads the server's figures and writes numbers, times and states, in the
// page's language.

import { clockTime, locale } from '../i18n.js';

// count reads a figure of the server as a number, 0 when it is missing or not one.
export const count = (v) => (Number.isFinite(Number(v)) ? Number(v) : 0);

// stateOf is the state of screening s that the page knows how to show; another reads as on sale. An
// archived screening reads as archived, whatever its sale's state (closed).
export function stateOf(s) {
  if (s.archived_at) return 'archived';
  const known = ['upcoming', 'on_sale', 'all_held', 'sold_out', 'closed', 'paused'];
  return known.includes(s.state) ? s.state : 'on_sale';
}

// checkoutOf is screening s's checkout mode, "instant" or "hold" ('' when the server does not say): the
// screening's own field, or its admission settings'.
export function checkoutOf(s) {
  const c = (s && (s.checkout || (s.admission && s.admission.checkout))) || '';
  return c === 'instant' || c === 'hold' ? c : '';
}

// clock is the time of day of ms, to the second, with its zone (i18n.js's clockTime, as on every page); –
// for none.
export function clock(ms) {
  return clockTime(ms) || '–';
}

// fmtNum writes v with at most fraction decimals; fmtRate one decimal below 10; fmtCount a whole number.
export function fmtNum(v, fraction) {
  return new Intl.NumberFormat(locale(), { maximumFractionDigits: fraction, minimumFractionDigits: 0 }).format(v);
}

export const fmtRate = (v) => fmtNum(v, v < 10 ? 1 : 0);
export const fmtCount = (v) => fmtNum(Math.round(v), 0);
