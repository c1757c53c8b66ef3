// claim.js: the link of the e-mail that says it is the buyer's turn, /s/{id}?claim={nonce}. The page trades
// the nonce for the place's token (POST /api/notify/claim {"claim"} → {"screening","token"}), keeps the
// token as the room keeps every token (localStorage, state.js), takes the nonce out of the address bar
// (history.replaceState), and connects with the token in the socket's hello, never in a URL. A refused link
// (410 LINK_USED, 410 LINK_EXPIRED, 404 LINK_UNKNOWN) is said in words, and nothing connects until the buyer
// presses "Join the line". When the server cannot be reached, the nonce stays in the address, so that a
// reload tries the link again.

import { requestJSON } from './booking.js';
import { finish } from './phases.js';
import { render } from './render.js';
import { restart } from './socket.js';
import { save, screening, setStore, st } from './state.js';

// tokenPattern: the tokens the server hands out (docs/protocol.md, 3).
const tokenPattern = /^[0-9a-f]{32}$/;

// claimFromURL is the nonce of the page's address, or '' when it has none.
export function claimFromURL() {
  try {
    return new URLSearchParams(location.search).get('claim') || '';
  } catch (_) {
    return '';
  }
}

// dropClaimFromURL takes the nonce out of the address bar and the history, keeping the rest of the address.
function dropClaimFromURL() {
  try {
    const u = new URL(location.href);
    u.searchParams.delete('claim');
    history.replaceState(history.state, '', u.pathname + u.search + u.hash);
  } catch (_) { /* a page without history: the spent nonce stays in the bar, refused if used again */ }
}

// refusal is the final state of a link the server refused.
function refusal(r) {
  if (r.code === 'LINK_USED') return 'link_used';
  if (r.code === 'LINK_EXPIRED') return 'link_expired';
  return 'link_unknown';
}

// claimPlace trades nonce for the place's token and connects with it; it reports whether it did.
export async function claimPlace(nonce) {
  st.phase = 'connecting';
  render();
  const r = await requestJSON('POST', '/api/notify/claim', { claim: nonce });
  const data = r.data && typeof r.data === 'object' ? r.data : {};
  const token = typeof data.token === 'string' ? data.token : '';
  const theirs = typeof data.screening === 'string' ? data.screening : screening;
  if (r.status === 200 && tokenPattern.test(token) && theirs === screening) {
    dropClaimFromURL();
    // The place of the link replaces whatever this browser kept for the screening.
    setStore({ token });
    save();
    restart();
    return true;
  }
  if (r.status === 0 || r.status === 429 || r.status >= 500) {
    finish('link_error'); // the nonce stays in the address: a reload tries it again
    return false;
  }
  dropClaimFromURL();
  finish(r.status === 200 ? 'link_unknown' : refusal(r));
  return false;
}
