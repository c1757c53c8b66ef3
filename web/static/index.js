// index.js: the list of screenings with their state and the seats left, refreshed while the page is open.

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

function card(s) {
  const state = ['on_sale', 'upcoming', 'sold_out'].includes(s.state) ? s.state : 'on_sale';
  const href = '/s/' + encodeURIComponent(s.id);
  const title = el('h2', null, state === 'sold_out' ? el('span', { textContent: s.name }) : el('a', { href, textContent: s.name }));
  const badge = el('span', { className: 'badge ' + state, textContent: t('state.' + state) });
  const seats = el('span', {
    className: 'muted',
    textContent: t('seatsLeft', { n: num(Math.max(0, s.seats_available | 0)), total: num(s.seats_total | 0) }),
  });
  const when = el('p', { className: 'muted small', textContent: t('startsAt', { time: dateTime(s.starts_at) }) });
  const item = el('li', { className: 'card screening' }, title, when, el('div', { className: 'meta' }, badge, state === 'sold_out' ? null : seats));
  if (state === 'upcoming') {
    item.append(el('p', { className: 'small', textContent: t('opensAt', { time: dateTime(s.sale_opens_at) }) }));
  }
  if (state !== 'sold_out') {
    const join = el('a', { className: 'btn', href, textContent: t(state === 'upcoming' ? 'joinUpcoming' : 'join') });
    join.setAttribute('aria-label', join.textContent + ': ' + s.name);
    item.append(el('div', { className: 'actions' }, join));
  }
  return item;
}

onChange(render);
render();
load();
setInterval(() => { if (!document.hidden) load(); }, refreshMs);
document.addEventListener('visibilitychange', () => { if (!document.hidden) load(); });
