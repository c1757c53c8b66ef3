// gate.js: the way back to a site behind the gate. The gate sends a visitor of a protected path here as
// /s/{id}?to=PATH; once admitted, the page posts its pass to the gate's enter URL, which the screening names
// (gate_enter in GET /api/screenings/{id}, never this page's URL), and the gate sets its cookie and sends
// the visitor on to PATH. A form POST, so the pass never sits in a URL, a history entry or a proxy's log.

import { t } from '../i18n.js';
import { announce } from './announce.js';
import { render } from './render.js';
import { siteName } from './site.js';
import { enc, screening, st, store } from './state.js';

// returnTo is the path on the site to go back to ('' when the page was not opened by the gate): a path only,
// never another site (the gate checks it again).
export const returnTo = readReturn();

function readReturn() {
  const to = new URLSearchParams(location.search).get('to') || '';
  return to.startsWith('/') && !to.startsWith('//') && !to.startsWith('/\\') ? to : '';
}

// enterURL is where the gate takes the pass, from the screening the server describes; '' when the room is
// not behind a gate.
async function enterURL() {
  let info = st.info;
  if (!info || !('gate_enter' in info)) {
    try {
      const res = await fetch(`/api/screenings/${enc}`, { cache: 'no-store' });
      info = res.ok ? await res.json() : null;
    } catch (_) {
      info = null;
    }
  }
  const url = info && typeof info.gate_enter === 'string' ? info.gate_enter : '';
  return /^https?:\/\//.test(url) ? url : '';
}

let sending = false;

// backToSite sends an admitted visitor back to the site with its pass, when the gate sent it here; it
// reports whether it did (then the page shows only "taking you back").
//
// Call it before showing the admitted view: until the enter URL is known the page already shows "taking you
// back" (st.toSite), not a seat map it is about to leave.
export async function backToSite() {
  if (!returnTo || !store.pass || sending) return sending;
  return enter(returnTo);
}

// enterSite takes an admitted visitor of a site-wide room opened without ?to= on to the site's home page,
// the same way; it reports whether it did.
export async function enterSite() {
  if (!store.pass || sending) return sending;
  return enter('/');
}

// enter posts the pass to the gate's enter URL, with the path on the site to go on to.
async function enter(to) {
  st.toSite = true;
  const action = await enterURL();
  if (sending) return true;
  if (!action) {
    st.toSite = false;
    render();
    return false;
  }
  sending = true;
  render();
  announce(t('gate.back', { site: siteName() }));
  const form = document.createElement('form');
  form.method = 'post';
  form.action = action;
  form.hidden = true;
  for (const [name, value] of [['pass', store.pass], ['room', screening], ['to', to]]) {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    input.value = value;
    form.append(input);
  }
  document.body.append(form);
  form.submit();
  return true;
}
