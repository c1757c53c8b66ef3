// index.js: the list of screenings with their state (upcoming, on sale, every seat held, sold out, or closed
// by the operator, each in words of its own) and the seats left (none for a site-wide room, a line in front
// of a site), refreshed while the page is open.

import { t, num, dateTime, onChange } from './i18n.js';
// refreshMs is how often the list reloads while the page is visible: seats left change during a sale.
const refreshMs = 15000;

const list = document.getElementById('screenings');
const status = document.getElementById('list-status');
let screenings = null; // the last list the server sent
let failed = false;
let loading = false;

async function load() {
  if (loading) return;
  loading = true;
  try {
    const res = await fetch('/api/screenings', { cache: 'no-store', headers: { Accept: 'application/json' } });
    if (!res.ok) throw new Error('status ' + res.status);
    const body = await res.json();
    screenings = Array.isArray(body) ? body : [];
    failed = false;
  } catch (_) {
    failed = true;
  } finally {
    loading = false;
  }
  render();
}

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props || {});
  for (const c of children) {
    if (c !== null && c !== undefined) e.append(c);
  }
  return e;
}

function render() {
  status.replaceChildren();
  status.className = 'notice';
  if (failed) {
    status.className = 'notice bad';
    const again = el('button', { type: 'button', className: 'btn small secondary', textContent: t('retry') });
    again.addEventListener('click', load);
    status.append(t('loadFailed') + ' ', again);
  } else if (screenings === null) {
    status.textContent = t('loading');
  } else if (screenings.length === 0) {
    status.textContent = t('empty');
  }
  if (screenings !== null) list.replaceChildren(...screenings.map(card));
}

// states are the screening states of the API. A state this page does not know is not taken for "on sale":
// the card says the screening is not on sale and links to its room, which tells what is going on.
const states = ['upcoming', 'on_sale', 'all_held', 'sold_out', 'closed'];
// joinable are the states whose line can be joined: before the opening, on sale, and every seat held (seats
// not paid for in time come back).
const joinable = { upcoming: 'joinUpcoming', on_sale: 'join', all_held: 'joinAllHeld' };

function card(s) {
  const state = states.includes(s.state) ? s.state : 'unknown';
  const href = '/s/' + encodeURIComponent(s.id);
  const over = state === 'sold_out' || state === 'closed';
  const title = el('h2', null, over ? el('span', { textContent: s.name }) : el('a', { href, textContent: s.name }));
  const mark = el('span', { className: 'mark' });
  mark.setAttribute('aria-hidden', 'true'); // the badge's shape, not read out: the words say it
  const badge = el('span', { className: 'badge ' + state }, mark, el('span', { textContent: t('state.' + state) }));
  badge.dataset.testid = 'state';
  badge.dataset.state = state;
  const held = Math.max(0, s.seats_held | 0);
  const left = { n: num(Math.max(0, s.seats_available | 0)), total: num(s.seats_total | 0), held: num(held) };
  const seats = over ? null : s.site_wide === true ? siteWideNote() : el('span', {
    className: 'muted',
    textContent: held > 0 ? t('seatsLeftHeld', left) : t('seatsLeft', left),
  });
  // A site-wide room is a line in front of a site, not a screening: no start time, no seats.
  const when = s.site_wide === true ? null : el('p', { className: 'muted small', textContent: t('startsAt', { time: dateTime(s.starts_at) }) });
  const item = el('li', { className: 'card screening' }, title, when, el('div', { className: 'meta' }, badge, seats));
  item.dataset.screening = String(s.id);
  if (state === 'upcoming') {
    item.append(el('p', { className: 'small', textContent: t('opensAt', { time: dateTime(s.sale_opens_at) }) }));
  } else if (state !== 'on_sale') {
    item.append(el('p', { className: 'small', textContent: t('list.' + state) }));
  }
  if (joinable[state]) {
    const join = el('a', { className: 'btn', href, textContent: t(joinable[state]) });
    join.setAttribute('aria-label', join.textContent + ': ' + s.name);
    item.append(el('div', { className: 'actions' }, join));
  }
  return item;
}

// siteWideNote stands where a screening's seats left are, for a site-wide room (site_wide): it has none.
function siteWideNote() {
  const note = el('span', { className: 'muted', textContent: t('list.siteWide') });
  note.dataset.testid = 'site-wide';
  return note;
}

onChange(render);
render();
load();
setInterval(() => { if (!document.hidden) load(); }, refreshMs);
document.addEventListener('visibilitychange', () => { if (!document.hidden) load(); });
