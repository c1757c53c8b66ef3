// site.js: a room that is not a screening. A site-wide room (site_wide: no seats, the line in front of a
// site behind the gate) shows no start time and no seat map: admitted, it says "You are in" and, opened
// without the gate's ?to=, offers the way on to the site. The page of a room behind the gate, when the gate
// sent the visitor here or the room is site-wide, names the site (gate_site_name: "You are in line for The
// Shop") and links back to it (gate_site_url) instead of to the list of screenings. render.js calls
// renderSite after drawing the views.

import { t } from '../i18n.js';
import { el } from './dom.js';
import { returnTo } from './gate.js';
import { st } from './state.js';

// siteWide reports whether the screening is a site-wide room, once the page knows the screening.
export function siteWide() {
  return !!(st.info && st.info.site_wide === true);
}

// site is the site behind the gate the page leads back to, {name, url}, or null: a room the gate does not
// protect, or one opened from the list that has seats to choose.
function site() {
  const info = st.info;
  if (!info || (!returnTo && !siteWide())) return null;
  const name = typeof info.gate_site_name === 'string' ? info.gate_site_name : '';
  const url = typeof info.gate_site_url === 'string' && /^https?:\/\//.test(info.gate_site_url) ? info.gate_site_url : '';
  return name && url ? { name, url } : null;
}

// siteName is what the page calls the site: its name, or "the site".
export function siteName() {
  const s = site();
  return s ? s.name : t('site.generic');
}

// hasGate reports whether an admitted visitor can be taken on to a site (the room is behind the gate).
function hasGate() {
  return !!(st.info && typeof st.info.gate_enter === 'string' && st.info.gate_enter);
}

// siteEnds are the final states a site-wide room says in words of its own, of a turn and a line rather
// than of seats and a sale. It never sells out: a line said to be sold out has ended.
const siteEnds = { expired: 'expired', closed: 'closed', ended: 'ended', sold_out: 'ended' };

// finalKey is the string key of part ('h' or 'p') of the final state kind.
export function finalKey(kind, part) {
  return siteWide() && siteEnds[kind] ? `site.final.${siteEnds[kind]}.${part}` : `final.${kind}.${part}`;
}

export function renderSite() {
  const s = site();
  el.back.textContent = s ? t('site.back', { site: s.name }) : t('back');
  el.back.href = s ? s.url : '/';
  el.finalList.textContent = s ? t('site.back', { site: s.name }) : t('toList');
  el.finalList.href = s ? s.url : '/';
  el.waitingHeading.textContent = s ? t('site.waitingHeading', { site: s.name }) : t('waitingHeading');
  if (s || siteWide()) el.when.textContent = ''; // a room has no start time
  const wide = siteWide();
  const inView = st.phase === 'admitted' && !st.toSite && wide;
  if (wide) el.admitted.hidden = true; // no seat map, no reserve: nothing to choose
  el.siteIn.hidden = !inView;
  if (!inView) return;
  const gated = hasGate();
  el.siteInText.textContent = gated ? t('site.inText', { site: siteName() }) : t('site.inNoGate');
  el.siteContinue.hidden = !gated;
  el.siteContinue.textContent = t('site.continue', { site: siteName() });
}
