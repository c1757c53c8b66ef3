// waitlist.js: the selected screening's waitlist and e-mail notices: whether the waitlist is on (the
// screening's "waitlist"), its figures while it is on (line.waitlist: length, offers_out, offers_taken,
// offers_expired, seats_offerable), the e-mail notices' figures when the server sends e-mail
// ("notifications": addresses, pending, sent, failed), and the toggle, PATCH
// /api/admin/screenings/{id}/admission {"waitlist": true|false}.

import { t, num } from '../i18n.js';
import { el, setText } from './dom.js';
import { count } from './format.js';
import { render } from './render.js';
import { api, errorMessage, handled } from './session.js';
import { merge, msg, msgText, selectedScreening, st } from './state.js';

const enc = encodeURIComponent;

// The figures shown, by field of the server's objects.
const waitlistFields = ['length', 'offers_out', 'offers_taken', 'offers_expired', 'seats_offerable'];
const notifyFields = ['addresses', 'pending', 'sent', 'failed'];

// wl is what the panel shows beside the screening: the screening it belongs to, a message, a request on its
// way.
const wl = { for: '', message: null, busy: false };

// waitlistOf is whether screening s has its waitlist on, or null when the server does not say.
export function waitlistOf(s) {
  if (!s) return null;
  if (typeof s.waitlist === 'boolean') return s.waitlist;
  if (s.admission && typeof s.admission.waitlist === 'boolean') return s.admission.waitlist;
  return null;
}

// figures is the object of counts o when it is one, else null.
function figures(o) {
  return o && typeof o === 'object' && !Array.isArray(o) ? o : null;
}

// notificationsOf is the e-mail notices' figures of screening s, present only when the server sends e-mail:
// the screening's own, else those of the stream's frame.
function notificationsOf(s) {
  if (!s) return null;
  return figures(s.notifications) || figures(s.line && s.line.notifications) || figures(st.notifications);
}

// follow is called after each redraw of the console: another screening empties the panel's message.
export function follow(s) {
  const id = s ? s.id : '';
  if (id !== wl.for) {
    wl.for = id;
    wl.message = null;
  }
  renderWaitlist();
}

// toggle turns the selected screening's waitlist on or off.
export async function toggle() {
  const s = selectedScreening();
  if (!s || wl.busy) return;
  const want = waitlistOf(s) !== true;
  wl.busy = true;
  wl.message = msg('', 'admin.sending');
  renderWaitlist();
  const r = await api('PATCH', `/api/admin/screenings/${enc(s.id)}/admission`, { waitlist: want });
  wl.busy = false;
  if (r.ok) {
    // The answer is the settings in force; a server that leaves the waitlist out of them took the one sent.
    const data = figures(r.data) || {};
    const on = typeof data.waitlist === 'boolean' ? data.waitlist : want;
    const now = selectedScreening();
    if (now && now.id === s.id) merge(Object.assign({}, now, { waitlist: on, admission: Object.assign({}, now.admission, data) }));
    wl.message = msg('ok', on ? 'admin.waitlist.doneOn' : 'admin.waitlist.doneOff', { id: s.id });
  } else if (!handled(r)) {
    wl.message = errorMessage(r);
  } else {
    wl.message = null;
  }
  render();
}

// renderWaitlist draws the setting among the others, and the panel: on or off, the figures, the toggle.
export function renderWaitlist() {
  const s = selectedScreening();
  const on = waitlistOf(s);
  setText(el.current.waitlist, on === null ? '–' : t(on ? 'admin.waitlist.on' : 'admin.waitlist.off'));
  el.current.waitlist.dataset.value = on === null ? '' : String(on);
  setText(el.waitlistState, on === null ? '' : t(on ? 'admin.waitlist.stateOn' : 'admin.waitlist.stateOff'));
  el.waitlistState.dataset.value = on === null ? '' : String(on);
  setText(el.waitlistToggle, t(on ? 'admin.waitlist.turnOff' : 'admin.waitlist.turnOn'));
  // A site-wide room never sells out: it has no waitlist to turn on.
  el.waitlistToggle.disabled = wl.busy || !s || s.site_wide === true;
  el.waitlistToggle.setAttribute('aria-busy', wl.busy ? 'true' : 'false');
  fill(el.waitlistFigures, el.wl, waitlistFields, figures(s && s.line && s.line.waitlist));
  const mail = notificationsOf(s);
  fill(el.notifyFigures, el.nt, notifyFields, mail);
  el.notifyOff.hidden = !s || Boolean(mail);
  setText(el.waitlistMessage, msgText(wl.message));
  el.waitlistMessage.className = 'notice' + (wl.message && wl.message.kind ? ' ' + wl.message.kind : '');
}

// fill shows the list of figures when there are any, each field in its cell (data-value: the number).
function fill(list, cells, fields, values) {
  list.hidden = !values;
  for (const k of fields) {
    const v = values ? values[k] : undefined;
    const known = v !== undefined && v !== null;
    setText(cells[k], known ? num(count(v)) : '–');
    cells[k].dataset.value = known ? String(count(v)) : '';
  }
}
