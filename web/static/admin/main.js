// main.js: the operator's control room (/admin).
//
// It asks for the admin key, keeps it in sessionStorage ("waitroom:admin-key": this tab only) and sends it as
// "Authorization: Bearer <key>" on every call to /api/admin/... A 401 forgets the key and asks again; a 404
// NOT_FOUND means the server has no admin.key, so the admin API is off.
//
// The live figures come from GET /api/admin/stream, server-sent events of one JSON frame a second. EventSource
// cannot send the key, so the page reads the stream with fetch and parses the frames itself, and reopens it
// with backoff and jitter when it ends or falls silent. The charts are drawn on canvas from the last two
// minutes of frames; each has its current value and a legend in text beside it and a text alternative.
// Server data reaches the page through textContent only.

import { t, onChange } from '../i18n.js';
import { act, askClose, fieldName, readSettings, saveAdmission, select } from './actions.js';
import { drawCharts } from './charts.js';
import { el } from './dom.js';
import { forgetSelectLabels, render, renderStream } from './render.js';
import { merge, msg, selectedFromHash, serverMsg, st } from './state.js';
import { api, apiOff, check, errorMessage, handled, signIn, signOut, wrongKey } from './session.js';
import { onRefused, pageShown } from './stream.js';

// tickMs refreshes the reconnect countdown.
const tickMs = 500;
const idPattern = /^[A-Za-z0-9_-]{1,64}$/;

async function create(e) {
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
    defaultTimes();
  } else if (!handled(r)) {
    st.createMessage = errorMessage(r);
  } else {
    st.createMessage = null;
  }
  render();
}

// defaultTimes suggests a sale that opens now and a screening two hours later.
function defaultTimes() {
  const opens = new Date();
  opens.setSeconds(0, 0);
  el.newOpens.value = localInput(opens);
  el.newStarts.value = localInput(new Date(opens.getTime() + 2 * 3600 * 1000));
}

function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// --- Wiring ----------------------------------------------------------------------------------------------

onRefused((status) => (status === 401 ? wrongKey(true) : apiOff()));

el.loginForm.addEventListener('submit', signIn);

el.problemRetry.addEventListener('click', check);

el.signOut.addEventListener('click', signOut);

el.select.addEventListener('change', () => select(el.select.value));
el.overviewRows.addEventListener('click', (e) => {
  const b = e.target.closest && e.target.closest('button[data-pick]');
  if (b) {
    select(b.dataset.pick);
    el.selectedHeading.focus();
  }
});

el.pause.addEventListener('click', () => act('pause'));
el.resume.addEventListener('click', () => act('resume'));
el.close.addEventListener('click', askClose);
el.dialogCancel.addEventListener('click', () => el.dialog.close());
el.dialogConfirm.addEventListener('click', () => {
  const id = el.dialog.dataset.screening;
  el.dialog.close();
  if (id && id === st.selected) act('close');
});
el.dialog.addEventListener('close', () => {
  if (st.view === 'console') el.close.focus();
});

el.admissionForm.addEventListener('input', () => { st.admissionDirty = true; });
el.admissionForm.addEventListener('submit', saveAdmission);
el.createForm.addEventListener('submit', create);
const layout = () => {
  el.gridFields.hidden = el.layoutList.checked;
  el.listFields.hidden = !el.layoutList.checked;
};
el.layoutGrid.addEventListener('change', layout);
el.layoutList.addEventListener('change', layout);

if (typeof ResizeObserver === 'function') {
  let pending = 0;
  new ResizeObserver(() => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(drawCharts);
  }).observe(el.charts);
}
if (window.matchMedia) {
  const dark = window.matchMedia('(prefers-color-scheme: dark)');
  if (dark.addEventListener) dark.addEventListener('change', drawCharts);
}
window.addEventListener('hashchange', () => {
  const id = selectedFromHash();
  if (id) select(id);
});
window.addEventListener('pageshow', pageShown);

onChange(() => {
  forgetSelectLabels(); // the state names in the options
  render();
});

setInterval(() => {
  if (st.view === 'console' && st.stream === 'reconnecting') renderStream();
}, tickMs);

// --- Start -----------------------------------------------------------------------------------------------

layout();
defaultTimes();
check();
