// announce.js: what screen readers hear: the polite live region (#announcer), and the rank (in the line or
// on the waitlist) as it moves, spaced out so that a fast line does not flood the listener.

import { t, num, ordinal } from '../i18n.js';
import { el } from './dom.js';
import { st } from './state.js';

// announceGapMs spaces out the polite announcements of a moving rank, so a screen reader is not flooded.
const announceGapMs = 10000;

let lastAnnounceMs = 0; // when the last announcement was made
let rankTimer = 0; // a pending announcement of the rank

// announce says text once, politely (after what the reader is saying).
export function announce(text) {
  lastAnnounceMs = Date.now();
  el.live.textContent = '';
  // A fresh node of text makes screen readers speak a repeated message too.
  setTimeout(() => { el.live.textContent = text; }, 60);
}

// announceRank says the rank now, or when announceGapMs has passed since the last announcement.
export function announceRank() {
  if (rankTimer) return; // the pending announcement reads the newest rank when it fires
  const say = () => {
    rankTimer = 0;
    if (st.phase === 'waiting') announce(t('announce.rank', { rank: ordinal(st.rank), total: num(st.total) }));
    else if (st.phase === 'waitlist') announce(t('announce.waitlistRank', { rank: num(st.rank), total: num(st.total) }));
  };
  const waitMs = lastAnnounceMs + announceGapMs - Date.now();
  if (waitMs <= 0) say();
  else rankTimer = setTimeout(say, waitMs);
}
