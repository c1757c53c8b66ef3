// waitlist.js: the waitlist of a sold-out sale (docs/protocol.md 5.4: "sold_out" with "waitlist": true,
// after which the socket stays open): its view, which says the sale is sold out for now and gives the place
// on the waitlist ("position": N of M), and that seats came back when they do ("reopened": they are offered
// in its order); the choice to stay there (the default: nothing is sent) or to leave it (phases.js askLeave,
// which sends {"type":"leave"}); and the party size offers are made for, 1 (the server's default) to
// max_seats (PUT /api/screenings/{id}/waitlist {"token","party"}), asked on the waitlist and in a line that
// is a waitlist already because every seat is held (all_held, hold mode). Seats that come back are offered
// ("offered", protocol.js).

import { t, num, locale } from '../i18n.js';
import { announce } from './announce.js';
import { requestJSON } from './booking.js';
import { el } from './dom.js';
import { enc, houseMaxSeats, save, st, store } from './state.js';

// defaultParty is the party size of a place that has not asked for another (docs/protocol.md 5.4).
const defaultParty = 1;

// partyRefusals: the server's refusals of a party size, by code, as string keys.
const partyRefusals = {
  INVALID_PARTY: 'party.INVALID_PARTY',
  NOT_IN_LINE: 'party.NOT_IN_LINE',
  WAITLIST_OFF: 'party.WAITLIST_OFF',
};

// stay answers "stay or leave" with stay. Nothing goes to the server: staying is what the open socket does
// already. The answer is kept, so a reconnect or a refresh does not ask again.
export function stay() {
  if (st.phase !== 'waitlist') return;
  store.stayed = true;
  save();
  renderWaitlist();
  announce(t('waitlist.stayedText'));
  // The button pressed is gone: focus moves on to what is left to do, the party size.
  el.partySize.focus();
}

// partyShown: the place waits on a waitlist, declared (sold out) or not (every seat held now or before, on a
// screening that keeps one), and can say how many seats it wants.
export function partyShown() {
  if (!store.token) return false;
  if (st.phase === 'waitlist') return true;
  if (st.phase !== 'waiting') return false;
  return store.waitlistLine === true || (st.allHeld && Boolean(st.info && st.info.waitlist === true));
}

// saveParty sends the party size chosen in the form.
export async function saveParty() {
  if (!partyShown() || st.partyBusy) return;
  const party = Number(el.partySize.value);
  if (!Number.isInteger(party) || party < 1) return;
  const token = store.token;
  st.partyBusy = true;
  st.partyMessage = { kind: '', key: 'party.saving' };
  renderParty();
  const r = await requestJSON('PUT', `/api/screenings/${enc}/waitlist`, { token, party });
  st.partyBusy = false;
  if (store.token !== token) return; // another place meanwhile: the answer is about one the page left
  if (r.status === 200) {
    const n = r.data && Number.isInteger(r.data.party) ? r.data.party : party;
    store.party = n;
    save();
    st.partyMessage = { kind: 'ok', key: 'party.saved', vars: { n } };
  } else if (r.status === 0) {
    st.partyMessage = { kind: 'bad', key: 'networkError' };
  } else {
    st.partyMessage = { kind: 'bad', key: partyRefusals[r.code] || 'serverError', vars: { max: houseMaxSeats() } };
  }
  renderParty();
}

// renderWaitlist draws the waitlist's view: the place on it, seats come back, the choice (once stayed, only
// the way out is left).
export function renderWaitlist() {
  if (st.phase !== 'waitlist') return;
  el.waitlistNote.textContent = st.waitlistNote ? t(st.waitlistNote) : '';
  const placed = st.rank > 0;
  el.waitlistPlace.hidden = !placed;
  el.waitlistPlace.textContent = placed ? t('waitlist.place', { rank: num(st.rank), total: num(st.total) }) : '';
  el.waitlistPlace.dataset.rank = placed ? String(st.rank) : '';
  el.waitlistPlace.dataset.total = placed ? String(st.total) : '';
  const stayed = store.stayed === true;
  el.waitlistStay.hidden = stayed;
  el.waitlistStayed.textContent = stayed ? t('waitlist.stayedText') : '';
}

// renderParty shows the party size while partyShown: a choice of 1 to max_seats, starting on the size the
// server took (1 until the buyer asks for more), and how the last request fared.
export function renderParty() {
  const shown = partyShown();
  el.party.hidden = !shown;
  if (!shown) return;
  const max = houseMaxSeats();
  const chosen = Math.min(Number.isInteger(store.party) ? store.party : defaultParty, max);
  const sig = `${max}|${locale()}|${chosen}`;
  if (el.partySize.dataset.sig !== sig) {
    const keep = el.partySize.dataset.sig ? el.partySize.value : '';
    const options = [];
    for (let n = 1; n <= max; n++) options.push(option(String(n), t('bestSeats', { n, num: num(n) })));
    el.partySize.replaceChildren(...options);
    const kept = keep !== '' && Number(keep) >= 1 && Number(keep) <= max;
    el.partySize.value = kept ? keep : String(chosen);
    el.partySize.dataset.sig = sig;
  }
  const m = st.partyMessage;
  const text = m ? t(m.key, m.vars) : '';
  if (el.partyStatus.textContent !== text) el.partyStatus.textContent = text;
  el.partyStatus.dataset.state = m ? m.kind : '';
  el.partyStatus.className = 'small' + (m && m.kind ? ' notice ' + m.kind : '');
  el.partySubmit.textContent = st.partyBusy ? t('party.saving') : t('party.submit');
  el.partySubmit.setAttribute('aria-disabled', st.partyBusy ? 'true' : 'false');
}

function option(value, text) {
  const o = document.createElement('option');
  o.value = value;
  o.textContent = text;
  return o;
}
