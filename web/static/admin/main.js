// main.js: the operator's control room (/admin): wires the page's events to the modules that handle them,
// and starts the page by asking the server whether the admin API is on and the key (if any) is right.
//
// The control room's modules, each with one job (its first lines say more):
//   session.js   the admin key (this tab's sessionStorage) and every call to /api/admin with it
//   stream.js    the live figures from /api/admin/stream, read with fetch (sse.js parses them) and reopened
//                with backoff and jitter (lib/reconnect.js) when the stream ends or falls silent
//   actions.js   choosing a screening, pause, resume, close, reset, archive, and its admission settings (the pace)
//   create.js    the form for a new screening
//   orders.js    the box office: the selected screening's orders, their CSV export, an operator's cancel
//   codes.js     the access codes: one-time codes made, a shared code, their CSV, and no code again
//   log.js       the admission log: its size, latest checkpoint and backlog, verify-log's command, its export
//   waitlist.js  the waitlist after a sell-out: on or off (the toggle), its offers' figures, the e-mail notices'
//   render.js    drawing the page from the state; charts.js and draw.js the live charts, from the last two
//                minutes of frames that history.js keeps
//   state.js     what the page knows; format.js how it writes figures; dom.js the page's elements
// Server data reaches the page through textContent only.

import { onChange } from '../i18n.js';
import { act, askClose, askReset, saveAdmission, select } from './actions.js';
import { drawCharts } from './charts.js';
import { exportCSV as exportCodes, follow as followCodes, make as makeCodes, off as codesOff, renderCodes, share as shareCode } from './codes.js';
import { create, defaultTimes, showLayoutFields } from './create.js';
import { el } from './dom.js';
import { copyCommand, exportLog, follow as followLog, renderLog } from './log.js';
import { askCancel, cancelAsked, dialogClosed, exportCSV, follow, load as loadOrders, renderOrders, setFilter } from './orders.js';
import { forgetSelectLabels, onConsoleRender, render, renderStream } from './render.js';
import { apiOff, check, signIn, signOut, wrongKey } from './session.js';
import { selectedFromHash, st } from './state.js';
import { onRefused, pageShown } from './stream.js';
import { follow as followWaitlist, renderWaitlist, toggle as toggleWaitlist } from './waitlist.js';

// tickMs refreshes the reconnect countdown.
const tickMs = 500;

// --- Wiring ----------------------------------------------------------------------------------------------

// The stream refused: 401, the key is wrong now; 404, the admin API is off.
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
el.reset.addEventListener('click', askReset);
el.resetCancel.addEventListener('click', () => el.resetDialog.close());
el.resetConfirm.addEventListener('click', () => {
  const id = el.resetDialog.dataset.screening;
  const force = el.resetForce.checked;
  el.resetDialog.close();
  if (id && id === st.selected) act('reset', force ? { force: true } : undefined);
});
el.resetDialog.addEventListener('close', () => {
  if (st.view === 'console') el.reset.focus();
});
el.archive.addEventListener('click', async () => {
  await act('archive');
  if (!el.unarchive.hidden) el.unarchive.focus(); // the button pressed is gone: focus its opposite
});
el.unarchive.addEventListener('click', async () => {
  await act('unarchive');
  if (!el.archive.hidden) el.archive.focus();
});

onConsoleRender(follow);
onConsoleRender(followCodes);
onConsoleRender(followLog);
onConsoleRender(followWaitlist);
el.waitlistToggle.addEventListener('click', toggleWaitlist);
el.logCopy.addEventListener('click', copyCommand);
el.logExport.addEventListener('click', exportLog);
el.codesForm.addEventListener('submit', makeCodes);
el.sharedForm.addEventListener('submit', shareCode);
el.codesExport.addEventListener('click', exportCodes);
el.codesOff.addEventListener('click', codesOff);
el.ordersStatus.addEventListener('change', () => setFilter(el.ordersStatus.value));
el.ordersRefresh.addEventListener('click', loadOrders);
el.ordersExport.addEventListener('click', exportCSV);
el.ordersRows.addEventListener('click', (e) => {
  const b = e.target.closest && e.target.closest('button[data-cancel]');
  if (b) askCancel(b.dataset.cancel);
});
el.orderDialogKeep.addEventListener('click', () => el.orderDialog.close());
el.orderDialogConfirm.addEventListener('click', () => {
  el.orderDialog.close();
  cancelAsked();
});
el.orderDialog.addEventListener('close', dialogClosed);

el.admissionForm.addEventListener('input', () => { st.admissionDirty = true; });
el.admissionForm.addEventListener('submit', saveAdmission);
el.createForm.addEventListener('submit', create);
el.layoutGrid.addEventListener('change', showLayoutFields);
el.layoutList.addEventListener('change', showLayoutFields);

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
  renderOrders();
  renderCodes();
  renderLog();
  renderWaitlist();
});

setInterval(() => {
  if (st.view === 'console' && st.stream === 'reconnecting') renderStream();
}, tickMs);

// --- Start -----------------------------------------------------------------------------------------------

showLayoutFields();
defaultTimes();
check();
