// seatmap.js: the seat map: a grid of seat buttons, rows in order and each seat in the column of its number,
// with its state (available, held by someone paying, sold), its pressed state and name, one seat in the Tab
// order, and the arrow keys to move between seats. A seat's name starts with the number it shows ("5, row E,
// available"), so what is seen is what is said (WCAG 2.5.3).

import { t } from '../i18n.js';
import { seatOrder } from '../lib/seats.js';
import { el } from './dom.js';
import { st } from './state.js';

// renderSeats builds the grid of seat buttons: rows in order, each seat in the column of its number.
export function renderSeats() {
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.seat : '';
  const map = el.seatmap;
  map.setAttribute('aria-label', t('seatMap'));
  if (!st.seats) {
    map.replaceChildren();
    return;
  }
  const rows = new Map();
  for (const s of st.seats) {
    const row = String(s.row);
    if (!rows.has(row)) rows.set(row, []);
    rows.get(row).push(s);
  }
  const labels = [...rows.keys()].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  let cols = 0;
  for (const list of rows.values()) {
    list.sort((a, b) => a.number - b.number);
    cols = Math.max(cols, ...list.map((s) => s.number | 0));
  }
  map.style.setProperty('--cols', String(cols));
  const out = labels.map((label, r) => {
    const row = document.createElement('div');
    row.className = 'seat-row';
    row.setAttribute('role', 'group');
    row.setAttribute('aria-label', t('rowLabel', { row: label }));
    row.append(rowLabel(label, 1, ''));
    rows.get(label).forEach((s, i) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'seat';
      b.dataset.seat = String(s.id);
      b.dataset.r = String(r);
      b.dataset.i = String(i);
      b.dataset.row = label;
      b.dataset.number = String(s.number);
      b.textContent = String(s.number);
      b.style.gridColumn = String((s.number | 0) + 1);
      row.append(b);
    });
    row.append(rowLabel(label, cols + 2, 'end'));
    return row;
  });
  map.replaceChildren(...out);
  map.dataset.cols = String(cols);
  updateSeatButtons();
  updateSeatmapScroll();
  if (focused) {
    const again = map.querySelector(`button[data-seat="${CSS.escape(focused)}"]`);
    if (again && !again.disabled) again.focus();
    else focusableSeat()?.focus();
  }
}

function rowLabel(text, column, extra) {
  const s = document.createElement('span');
  s.className = 'row-label' + (extra ? ' ' + extra : '');
  s.setAttribute('aria-hidden', 'true');
  s.textContent = text;
  s.style.gridColumn = String(column);
  return s;
}

// updateSeatButtons sets each button's state, pressed state, name and place in the Tab order (one seat only:
// the arrow keys move within the map). A seat held or sold is disabled; held and sold differ in words, border,
// fill and mark, not in colour alone.
export function updateSeatButtons() {
  const status = new Map((st.seats || []).map((s) => [String(s.id), s.status]));
  const buttons = [...el.seatmap.querySelectorAll('button[data-seat]')];
  for (const b of buttons) {
    const seat = status.get(b.dataset.seat);
    b.disabled = seat !== 'available';
    b.classList.toggle('held', seat === 'held');
    b.classList.toggle('sold', seat !== 'available' && seat !== 'held');
  }
  const tabSeat = buttons.find((b) => b.dataset.seat === st.focusSeat && !b.disabled) ||
    buttons.find((b) => st.selected.has(b.dataset.seat) && !b.disabled) ||
    buttons.find((b) => !b.disabled);
  for (const b of buttons) {
    const id = b.dataset.seat;
    let state;
    if (b.disabled) {
      b.removeAttribute('aria-pressed');
      state = b.classList.contains('held') ? 'held' : 'sold';
    } else {
      const on = st.selected.has(id);
      b.setAttribute('aria-pressed', on ? 'true' : 'false');
      state = on ? 'selected' : 'available';
    }
    const name = t('seatName', { id, number: b.dataset.number, row: b.dataset.row, state: t('seat.' + state) });
    if (b.getAttribute('aria-label') !== name) {
      b.setAttribute('aria-label', name);
      b.title = name;
    }
    b.tabIndex = b === tabSeat ? 0 : -1;
  }
}

// applySeatChanges applies the seats' new states (a "seats" message: [{id, status}]) to the map as it is
// drawn. A chosen seat that is no longer available leaves the choice, and is returned, so the page can say
// so; focus on a seat that became unavailable moves to the nearest open seat of its row, else to the map.
export function applySeatChanges(changes) {
  const lost = [];
  const byID = new Map((st.seats || []).map((s) => [String(s.id), s]));
  for (const c of changes) {
    if (!c || typeof c.id !== 'string' || !['available', 'held', 'sold'].includes(c.status)) continue;
    st.seatUpdates.set(c.id, c.status);
    const seat = byID.get(c.id);
    if (seat) seat.status = c.status;
    if (c.status !== 'available' && st.selected.delete(c.id)) lost.push(c.id);
  }
  const focused = document.activeElement && document.activeElement.closest && document.activeElement.closest('button[data-seat]');
  updateSeatButtons();
  if (focused && focused.disabled) {
    const row = [...focused.parentElement.querySelectorAll('button[data-seat]')];
    const i = row.indexOf(focused);
    const near = row.filter((b) => !b.disabled).sort((a, b) => Math.abs(row.indexOf(a) - i) - Math.abs(row.indexOf(b) - i))[0];
    if (near) {
      st.focusSeat = near.dataset.seat;
      updateSeatButtons();
      near.focus();
    } else {
      el.seatmap.focus();
    }
  }
  return lost.sort(seatOrder);
}

function focusableSeat() {
  return el.seatmap.querySelector('button[data-seat][tabindex="0"]');
}

// Arrow keys move between available seats; Home and End go to the ends of the row.
export function onSeatKey(e) {
  const b = e.target.closest && e.target.closest('button[data-seat]');
  if (!b) return;
  const rows = [...el.seatmap.querySelectorAll('.seat-row')].map((row) => [...row.querySelectorAll('button[data-seat]')]);
  const r = Number(b.dataset.r);
  const i = Number(b.dataset.i);
  const open = (x) => x && !x.disabled;
  let next = null;
  switch (e.key) {
    case 'ArrowLeft':
      for (let j = i - 1; j >= 0 && !next; j--) if (open(rows[r][j])) next = rows[r][j];
      break;
    case 'ArrowRight':
      for (let j = i + 1; j < rows[r].length && !next; j++) if (open(rows[r][j])) next = rows[r][j];
      break;
    case 'ArrowUp':
    case 'ArrowDown': {
      const step = e.key === 'ArrowUp' ? -1 : 1;
      const number = Number(b.textContent);
      for (let q = r + step; q >= 0 && q < rows.length && !next; q += step) {
        let best = null;
        for (const c of rows[q]) {
          if (open(c) && (!best || Math.abs(Number(c.textContent) - number) < Math.abs(Number(best.textContent) - number))) best = c;
        }
        next = best;
      }
      break;
    }
    case 'Home':
      next = rows[r].find(open) || null;
      break;
    case 'End':
      next = [...rows[r]].reverse().find(open) || null;
      break;
    default:
      return;
  }
  e.preventDefault();
  if (next) {
    st.focusSeat = next.dataset.seat;
    updateSeatButtons();
    next.focus();
  }
}

// updateSeatmapScroll shows that a map wider than its box scrolls: data-more on the box says which sides hide
// seats (the style sheet fades those edges and shows the scroll bar), and a line above the map says how many
// seats each row has. A map that fits shows neither.
export function updateSeatmapScroll() {
  const wrap = el.seatmapWrap;
  const hidden = wrap.scrollWidth - wrap.clientWidth;
  const more = [];
  if (hidden > 1) {
    if (wrap.scrollLeft > 1) more.push('left');
    if (wrap.scrollLeft < hidden - 1) more.push('right');
  }
  const value = more.join(' ');
  if (wrap.dataset.more !== value) wrap.dataset.more = value;
  wrap.dataset.overflow = hidden > 1 ? 'true' : 'false';
  el.seatmapHint.hidden = !(hidden > 1);
  const text = hidden > 1 ? t('seatMapMore', { cols: el.seatmap.dataset.cols || '' }) : '';
  if (el.seatmapHint.textContent !== text) el.seatmapHint.textContent = text;
}

// watchSeatmapScroll keeps updateSeatmapScroll's marks true as the map scrolls and its box changes size.
export function watchSeatmapScroll() {
  el.seatmapWrap.addEventListener('scroll', updateSeatmapScroll, { passive: true });
  new ResizeObserver(updateSeatmapScroll).observe(el.seatmapWrap);
}
