// codes.js: the access codes of the selected screening: one-time codes made in a batch (POST
// /api/admin/screenings/{id}/codes {"count": N}, shown here once to copy), one code shared by everyone
// ({"shared": "CODE"}), the list of every code and its state as CSV (GET .../codes?format=csv, fetched with
// the key and saved as a file), and the way back to no code (PATCH .../admission {"codes_required": false}).

import { el, setText } from './dom.js';
import { downloadCSV } from './orders.js';
import { render } from './render.js';
import { api, errorMessage, handled } from './session.js';
import { merge, msg, msgText, selectedScreening, st } from './state.js';

// maxCount is the most codes the form asks for at once; the server has its own bound.
const maxCount = 10000;

const enc = encodeURIComponent;

// cd is what the panel shows: the screening it belongs to, the codes just made, a message, a request on
// its way.
const cd = { for: '', made: [], message: null, busy: false };

// follow is called after each redraw of the console: another screening empties the panel.
export function follow(s) {
  const id = s ? s.id : '';
  if (id !== cd.for) {
    cd.for = id;
    cd.made = [];
    cd.message = null;
  }
  renderCodes();
}

// required marks the screening as requiring a code (or not) until the next frame says so itself.
function required(id, on) {
  const s = selectedScreening();
  if (s && s.id === id) merge(Object.assign({}, s, { admission: Object.assign({}, s.admission, { codes_required: on }) }));
}

// send runs one request of the panel and says how it went.
async function send(method, path, body, done) {
  const s = selectedScreening();
  if (!s || cd.busy) return;
  cd.busy = true;
  cd.message = msg('', 'admin.sending');
  renderCodes();
  const r = await api(method, `/api/admin/screenings/${enc(s.id)}${path}`, body, { own404: true });
  cd.busy = false;
  if (r.ok) {
    done(s.id, r.data);
  } else if (!handled(r)) {
    cd.message = errorMessage(r);
  } else {
    cd.message = null;
  }
  render();
}

// make asks for the number of one-time codes in the form.
export function make(e) {
  e.preventDefault();
  const n = Number(el.codesCount.value.trim());
  if (!Number.isInteger(n) || n < 1 || n > maxCount) {
    el.codesCount.setAttribute('aria-invalid', 'true');
    cd.message = msg('bad', 'admin.codes.badCount', { max: maxCount });
    renderCodes();
    el.codesCount.focus();
    return;
  }
  el.codesCount.removeAttribute('aria-invalid');
  send('POST', '/codes', { count: n }, (id, data) => {
    cd.made = data && Array.isArray(data.codes) ? data.codes.map(String) : [];
    cd.message = msg('ok', 'admin.codes.made', { n: cd.made.length, id });
    required(id, true);
  });
}

// share sets the shared code in the form.
export function share(e) {
  e.preventDefault();
  const code = el.sharedCode.value.trim();
  if (!code) {
    el.sharedCode.setAttribute('aria-invalid', 'true');
    cd.message = msg('bad', 'admin.codes.sharedEmpty');
    renderCodes();
    el.sharedCode.focus();
    return;
  }
  el.sharedCode.removeAttribute('aria-invalid');
  send('POST', '/codes', { shared: code }, (id, data) => {
    el.sharedCode.value = '';
    cd.message = msg('ok', 'admin.codes.sharedSet', { id });
    required(id, !(data && data.codes_required === false));
  });
}

// off lets everyone in again without a code; the codes stay, for the record.
export function off() {
  send('PATCH', '/admission', { codes_required: false }, (id, data) => {
    const s = selectedScreening();
    if (s && s.id === id && data && typeof data === 'object') merge(Object.assign({}, s, { admission: data }));
    else required(id, false);
    cd.message = msg('ok', 'admin.codes.offDone', { id });
  });
}

// exportCSV saves every code of the screening and its state as a CSV file.
export async function exportCSV() {
  const s = selectedScreening();
  if (!s || cd.busy || !st.key) return;
  cd.busy = true;
  cd.message = msg('', 'admin.orders.exporting');
  renderCodes();
  const m = await downloadCSV(`/api/admin/screenings/${enc(s.id)}/codes?format=csv`, `codes-${s.id}.csv`);
  cd.busy = false;
  if (!m) return;
  cd.message = m;
  renderCodes();
}

// renderCodes draws the panel: the codes just made, the message, the buttons.
export function renderCodes() {
  const s = selectedScreening();
  const codes = cd.made.join('\n');
  if (el.codesNew.dataset.codes !== codes) {
    el.codesNew.dataset.codes = codes;
    el.codesNew.replaceChildren(...cd.made.map((c) => {
      const li = document.createElement('li');
      li.textContent = c;
      return li;
    }));
  }
  el.codesNew.hidden = cd.made.length === 0;
  setText(el.codesMessage, msgText(cd.message));
  el.codesMessage.className = 'notice' + (cd.message && cd.message.kind ? ' ' + cd.message.kind : '');
  const needed = Boolean(s && s.admission && s.admission.codes_required);
  for (const b of [el.codesMake, el.sharedSet, el.codesExport]) b.disabled = cd.busy || !s;
  el.codesOff.disabled = cd.busy || !needed;
}
