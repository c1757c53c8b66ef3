// notify.js: the e-mail notice, offered while the buyer waits in the line or on the waitlist and only when
// the server can send e-mail (notify: true in GET /api/screenings/{id}): PUT /api/screenings/{id}/notify
// {"token","email","lang"} asks for one e-mail when it is the buyer's turn, in the page's language of that
// moment; DELETE of the same path with {"token"} takes it back. The server answers the address masked
// ("a***@b.example"), and only that is kept (store.notify), to say where the e-mail goes.

import { t, locale } from '../i18n.js';
import { announce } from './announce.js';
import { requestJSON } from './booking.js';
import { el } from './dom.js';
import { enc, save, st, store } from './state.js';

// looksLikeEmail is a first check before the server's own: something, an @, something, no spaces.
const looksLikeEmail = /^[^\s@]+@[^\s@]+$/;

// notifyRefusals: the server's refusals of the notice, by code, as string keys.
const notifyRefusals = {
  INVALID_EMAIL: 'notify.INVALID_EMAIL',
  NOT_IN_LINE: 'notify.NOT_IN_LINE',
};

// notifyShown: the buyer waits (in the line or on the waitlist) for a place the server can e-mail about.
export function notifyShown() {
  const waiting = st.phase === 'waiting' || st.phase === 'waitlist';
  return waiting && Boolean(st.info && st.info.notify === true) && Boolean(store.token);
}

// lang is the page's language as the server names it.
function lang() {
  return locale().startsWith('ko') ? 'ko' : 'en';
}

// subscribe sends the address typed in.
export async function subscribe() {
  if (!notifyShown() || st.notifyBusy) return;
  const email = el.notifyEmail.value.trim();
  if (!looksLikeEmail.test(email)) {
    st.notifyMessage = { kind: 'bad', key: email ? 'notify.INVALID_EMAIL' : 'notify.empty' };
    el.notifyEmail.setAttribute('aria-invalid', 'true');
    renderNotify();
    el.notifyEmail.focus();
    return;
  }
  const r = await send('PUT', { token: store.token, email, lang: lang() });
  if (!r) return;
  if (r.status === 200) {
    const data = r.data || {};
    store.notify = { email: typeof data.email === 'string' ? data.email : '', lang: typeof data.lang === 'string' ? data.lang : lang() };
    save();
    el.notifyEmail.value = '';
    el.notifyEmail.removeAttribute('aria-invalid');
    st.notifyMessage = null;
    renderNotify();
    // The form is gone: focus goes to the words that say where the e-mail goes.
    el.notifyAddress.focus();
    return;
  }
  refused(r);
  if (r.code === 'INVALID_EMAIL') {
    el.notifyEmail.setAttribute('aria-invalid', 'true');
    el.notifyEmail.focus();
  }
}

// unsubscribe takes the notice back.
export async function unsubscribe() {
  if (!notifyShown() || st.notifyBusy || !store.notify) return;
  const r = await send('DELETE', { token: store.token });
  if (!r) return;
  if (r.status === 204 || r.status === 200 || r.code === 'NOT_IN_LINE') {
    // Gone either way: a place no longer in line has no notice left to take back.
    delete store.notify;
    save();
    st.notifyMessage = { kind: 'ok', key: 'notify.stopped' };
    renderNotify();
    el.notifyEmail.focus();
    return;
  }
  refused(r);
}

// send runs one request of the notice and returns its answer, or null when the place changed meanwhile.
async function send(method, body) {
  const token = store.token;
  st.notifyBusy = true;
  st.notifyMessage = { kind: '', key: 'notify.sending' };
  renderNotify();
  const r = await requestJSON(method, `/api/screenings/${enc}/notify`, body);
  st.notifyBusy = false;
  if (store.token !== token) {
    st.notifyMessage = null;
    renderNotify();
    return null;
  }
  return r;
}

// refused says why the server refused; NOTIFY_OFF hides the notice, the server having no e-mail to send.
function refused(r) {
  if (r.code === 'NOTIFY_OFF') {
    if (st.info) st.info.notify = false;
    st.notifyMessage = null;
    renderNotify();
    announce(t('notify.NOTIFY_OFF'));
    return;
  }
  st.notifyMessage = { kind: 'bad', key: r.status === 0 ? 'networkError' : notifyRefusals[r.code] || 'serverError' };
  renderNotify();
}

// renderNotify shows the notice while notifyShown: the address field, or where the e-mail goes and the way to
// stop it; and how the last request fared.
export function renderNotify() {
  const shown = notifyShown();
  el.notify.hidden = !shown;
  if (!shown) return;
  const set = Boolean(store.notify);
  el.notifyForm.hidden = set;
  el.notifySet.hidden = !set;
  el.notifyAddress.textContent = set ? t('notify.set', { email: store.notify.email || t('notify.yourAddress') }) : '';
  const m = st.notifyMessage;
  const text = m ? t(m.key, m.vars) : '';
  if (el.notifyStatus.textContent !== text) el.notifyStatus.textContent = text;
  el.notifyStatus.dataset.state = m ? m.kind : '';
  el.notifyStatus.className = 'small' + (m && m.kind ? ' notice ' + m.kind : '');
  el.notifySubmit.textContent = st.notifyBusy && !set ? t('notify.sending') : t('notify.submit');
  el.notifySubmit.setAttribute('aria-disabled', st.notifyBusy ? 'true' : 'false');
  el.notifyStop.setAttribute('aria-disabled', st.notifyBusy ? 'true' : 'false');
}
