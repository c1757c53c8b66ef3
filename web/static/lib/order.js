// order.js: what the ticket page (ticket/) and the demo checkout (checkout/) share: the order code of the
// page's address, the order API (GET /api/orders/{code} and the buyer's POSTs), the server's clock as the
// Date header tells it, and how an order's fields are written.

import { dateTime } from '../i18n.js';
import { sortedSeats } from './seats.js';

// dateSkewMinMs: the Date header tells the server's time to the second only, so a difference smaller than
// that is no evidence of a wrong client clock.
const dateSkewMinMs = 1000;

// statuses are the states of an order the pages know; anything else is shown as the server spells it.
export const statuses = ['held', 'confirmed', 'cancelled', 'expired'];

// codeFromPath is the order code: the last segment of /t/{code} or /checkout/{code}.
export function codeFromPath() {
  const parts = location.pathname.split('/').filter(Boolean);
  try {
    return decodeURIComponent(parts[parts.length - 1] || '');
  } catch (_) {
    return '';
  }
}

export const orderPath = (code) => `/api/orders/${encodeURIComponent(code)}`;
export const ticketPath = (code) => `/t/${encodeURIComponent(code)}`;

let skewMs = 0; // the server's clock minus this one's, once a Date header shows a clear difference

// serverNow is the time on the server's clock, as far as the page can tell.
export const serverNow = () => Date.now() + skewMs;

// noteServerDate estimates the server's clock from a response's Date header: the middle of its second,
// against the middle of the request.
function noteServerDate(header, sentMs, receivedMs) {
  const d = Date.parse(header || '');
  if (Number.isNaN(d)) return;
  const skew = d + 500 - (sentMs + receivedMs) / 2;
  skewMs = Math.abs(skew) > dateSkewMinMs ? skew : 0;
}

// call sends one request of the order API and returns {status, order, code, message}: status 0 when it
// did not reach the server; order when the answer is one; code and message of a refusal.
export async function call(method, code, action) {
  const path = orderPath(code) + (action ? '/' + action : '');
  const sentMs = Date.now();
  let res;
  try {
    res = await fetch(path, { method, cache: 'no-store', headers: { Accept: 'application/json' } });
  } catch (_) {
    return { status: 0, order: null, code: '', message: '' };
  }
  noteServerDate(res.headers.get('Date'), sentMs, Date.now());
  const body = await res.json().catch(() => null);
  const err = body && typeof body.error === 'object' && body.error ? body.error : null;
  const isOrder = res.ok && body && typeof body.code === 'string';
  return {
    status: res.status,
    order: isOrder ? body : null,
    code: err ? String(err.code || '') : '',
    message: err ? String(err.message || '') : '',
  };
}

// when writes an RFC 3339 time as a date and time of the page's language, with its zone (i18n.js's
// dateTime, the format of every page); '' for none.
export const when = (v, style) => dateTime(v, style);

// seatsOf is the order's seats, as strings, in seat order (lib/seats.js).
export const seatsOf = (o) => sortedSeats(o && o.seats);

// setText writes text into node only when it differs, so a redraw leaves a screen reader's place alone.
export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}
