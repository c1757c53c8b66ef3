// create.js: the form for a new screening: its id, name and times (local time), its seats as a grid or a
// list of ids, its waitlist after a sell-out (optional), and optional admission settings; checked here
// first, then by the server.

import { t } from '../i18n.js';
import { fieldName, readSettings, select } from './actions.js';
import { el } from './dom.js';
import { render } from './render.js';
import { api, errorMessage, handled } from './session.js';
import { merge, msg, serverMsg, st } from './state.js';

// idPattern: the ids the server accepts, which also make the link /s/{id}.
const idPattern = /^[A-Za-z0-9_-]{1,64}$/;

// create checks the form and creates the screening; the new one is then selected.
export async function create(e) {
  e.preventDefault();
  if (st.createBusy) return;
  const problems = [];
  const bad = (input, text) => {
    input.setAttribute('aria-invalid', 'true');
    problems.push({ input, text });
  };
  const all = [el.newID, el.newOpens, el.newStarts, el.newRows, el.newPerRow, el.newSeats];
  all.forEach((i) => i.removeAttribute('aria-invalid'));
  const id = el.newID.value.trim();
  if (!idPattern.test(id)) bad(el.newID, t('admin.badId'));
  const body = { id, name: el.newName.value.trim() };
  for (const [field, input] of [['sale_opens_at', el.newOpens], ['starts_at', el.newStarts]]) {
    const d = input.value ? new Date(input.value) : null; // datetime-local without an offset: local time
    if (!d || Number.isNaN(d.getTime())) bad(input, t('admin.badTime', { field: fieldName(input) }));
    else body[field] = d.toISOString();
  }
  if (el.layoutList.checked) {
    body.seats = el.newSeats.value.split(/[\s,;]+/).filter(Boolean).map((x) => x.toUpperCase());
  } else {
    for (const [field, input] of [['rows', el.newRows], ['seats_per_row', el.newPerRow]]) {
      const n = Number(input.value);
      if (!Number.isInteger(n) || n < 1) bad(input, t('admin.badCount', { field: fieldName(input) }));
      else body[field] = n;
    }
  }
  const settings = readSettings(el.newAdm, null);
  problems.push(...settings.problems);
  if (Object.keys(settings.body).length) body.admission = settings.body;
  // Sent only when ticked, so a server without a waitlist takes the form as before.
  if (el.newWaitlist.checked) body.waitlist = true;
  if (problems.length) {
    st.createMessage = serverMsg('bad', problems.map((p) => p.text).join(' '));
    render();
    problems[0].input.focus();
    return;
  }
  st.createBusy = true;
  st.createMessage = msg('', 'admin.sending');
  render();
  const r = await api('POST', '/api/admin/screenings', body);
  st.createBusy = false;
  if (r.status === 201 && r.data) {
    merge(r.data);
    select(r.data.id);
    st.createMessage = msg('ok', 'admin.created', { id: r.data.id });
    el.newID.value = '';
    el.newName.value = '';
    el.newWaitlist.checked = false;
    defaultTimes();
  } else if (!handled(r)) {
    st.createMessage = errorMessage(r);
  } else {
    st.createMessage = null;
  }
  render();
}

// defaultTimes suggests a sale that opens now and a screening two hours later.
export function defaultTimes() {
  const opens = new Date();
  opens.setSeconds(0, 0);
  el.newOpens.value = localInput(opens);
  el.newStarts.value = localInput(new Date(opens.getTime() + 2 * 3600 * 1000));
}

// localInput writes d as a datetime-local input's value, in local time.
function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// showLayoutFields shows the fields of the chosen seat layout: rows and seats per row, or a list of ids.
export function showLayoutFields() {
  el.gridFields.hidden = el.layoutList.checked;
  el.listFields.hidden = !el.layoutList.checked;
}
