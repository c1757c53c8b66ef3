// booking.js: the HTTP side of the room: the screening's name and times (and an estimate of the server's
// clock from the Date header), the seats, the choice of seats (at most maxSeats), and the reservation made
// with the pass, with what each refusal of the server means for the page.

import { t } from '../i18n.js';
import { announce } from './announce.js';
import { finish, showConfirmed } from './phases.js';
import { render, renderCountdown } from './render.js';
import { renderSeats, seatOrder, updateSeatButtons } from './seatmap.js';
import { enc, maxSeats, readStore, save, setStore, st, store } from './state.js';

// dateSkewMinMs: the HTTP Date header tells the server's time to the second only, so an offset it shows
// is used (before any tick_at) only when larger than that uncertainty: a client clock that is clearly off.
const dateSkewMinMs = 1000;

// loadInfo fetches the screening's name, times and max_seats; a 404 means there is no such screening.
export async function loadInfo() {
  try {
    const sentMs = Date.now();
    const res = await fetch(`/api/screenings/${enc}`, { cache: 'no-store' });
    noteServerDate(res.headers.get('Date'), sentMs, Date.now());
    if (res.status === 404) {
      if (!store.reservation) finish('unknown');
      return;
    }
    if (!res.ok) return;
    st.info = await res.json();
    render();
  } catch (_) { /* the name is a nicety; the socket says what matters */ }
}

// noteServerDate estimates the server clock from a response's Date header, for the countdown to the
// opening before any tick_at arrives. The header is truncated to the second: the middle of that second,
// against the middle of the request.
function noteServerDate(header, sentMs, receivedMs) {
  const d = Date.parse(header || '');
  if (Number.isNaN(d) || st.skewFromTick) return;
  const skew = d + 500 - (sentMs + receivedMs) / 2;
  if (Math.abs(skew) > dateSkewMinMs) {
    st.skewMs = skew;
    if (st.phase === 'prequeue') renderCountdown();
  }
}

// loadSeats fetches the seats and drops from the choice those no longer available.
export async function loadSeats() {
  st.seatsState = 'loading';
  render();
  try {
    const res = await fetch(`/api/screenings/${enc}/seats`, { cache: 'no-store' });
    if (!res.ok) throw new Error('status ' + res.status);
    const list = await res.json();
    if (!Array.isArray(list)) throw new Error('not a list');
    st.seats = list;
    st.seatsState = 'ok';
    const available = new Set(list.filter((s) => s.status === 'available').map((s) => s.id));
    for (const id of [...st.selected]) {
      if (!available.has(id)) st.selected.delete(id);
    }
  } catch (_) {
    st.seatsState = 'failed';
  }
  renderSeats();
  render();
}

// toggleSeat adds an available seat to the choice or takes it out, up to maxSeats.
export function toggleSeat(id) {
  if (st.phase !== 'admitted' || st.busy) return;
  const seat = (st.seats || []).find((s) => s.id === id);
  if (!seat || seat.status !== 'available') return;
  if (st.selected.has(id)) {
    st.selected.delete(id);
    st.message = null;
  } else if (st.selected.size >= maxSeats()) {
    st.message = { kind: 'warn', text: t('maxSeats', { max: maxSeats() }) };
  } else {
    st.selected.add(id);
    st.message = null;
  }
  updateSeatButtons();
  render();
}

// reserve books the chosen seats with the pass (Authorization: Bearer).
export async function reserve() {
  if (st.busy || st.selected.size === 0 || !store.pass || st.phase !== 'admitted') return;
  const seats = [...st.selected].sort(seatOrder);
  st.busy = true;
  st.message = null;
  render();
  let res;
  let body = {};
  try {
    res = await fetch(`/api/screenings/${enc}/reservations`, {
      method: 'POST',
      cache: 'no-store',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + store.pass },
      body: JSON.stringify({ seats }),
    });
    body = await res.json().catch(() => ({}));
  } catch (_) {
    st.busy = false;
    st.message = { kind: 'bad', text: t('networkError') };
    render();
    return;
  }
  st.busy = false;
  if (res.status === 201) {
    confirm({ id: body.id, seats: Array.isArray(body.seats) ? body.seats : seats, createdAt: body.created_at });
    return;
  }
  const err = (body && body.error) || {};
  switch (err.code) {
    case 'SEAT_TAKEN':
    case 'SEAT_LOCKED': {
      const bad = Array.isArray(err.seats) ? err.seats.map(String) : [];
      bad.forEach((s) => st.selected.delete(s));
      st.message = {
        kind: 'warn',
        text: t(err.code === 'SEAT_TAKEN' ? 'seatTaken' : 'seatLocked', { seats: bad.join(', '), n: bad.length || 1 }),
      };
      loadSeats();
      break;
    }
    case 'SOLD_OUT':
      finish('sold_out');
      return;
    case 'PASS_SPENT':
      setStore(readStore()); // another tab may have booked with this turn
      if (store.reservation) showConfirmed();
      else finish('spent');
      return;
    case 'INVALID_PASS':
      finish('expired');
      return;
    case 'BAD_REQUEST':
      st.message = { kind: 'bad', text: t('badRequest', { msg: String(err.message || '') }) };
      break;
    default:
      st.message = { kind: 'bad', text: t('serverError') };
  }
  render();
}

// confirm keeps only the booking in storage, so a refresh or another tab shows it too.
function confirm(reservation) {
  setStore({ reservation });
  save();
  showConfirmed();
  announce(t('confirmedHeading') + '. ' + t('confirmedSeats') + ': ' + reservation.seats.join(', '));
}
