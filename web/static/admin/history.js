// history.js: each screening's figures of the last two minutes, one sample per frame of the stream, for
// the charts.

import { count } from './format.js';
import { st } from './state.js';

// windowMs is how much history the charts show.
export const windowMs = 120000;
// gapMs: samples further apart than this (the stream was down) are not joined by a line, and give no rate.
export const gapMs = 5000;

// pastByID holds each screening's samples of the last windowMs (and one before, for the first rate).
const pastByID = new Map();

// record adds a frame's figures of screening s to its history.
export function record(s, atMs) {
  const line = s.line && typeof s.line === 'object' ? s.line : {};
  const skips = {};
  if (line.skips && typeof line.skips === 'object') {
    for (const [reason, n] of Object.entries(line.skips)) skips[reason] = count(n);
  }
  const sockets = {};
  for (const inst of st.instances) sockets[inst.id] = count(inst.sockets && inst.sockets[s.id]);
  const sample = {
    atMs,
    waiting: count(line.waiting),
    pre: count(line.pre_queue),
    active: count(line.active),
    admittedTotal: count(line.admitted_total),
    sold: count(s.seats_sold),
    seatsTotal: count(s.seats_total),
    maxActive: count(s.admission && s.admission.max_active),
    skips,
    sockets,
  };
  let past = pastByID.get(s.id);
  if (!past) pastByID.set(s.id, (past = []));
  if (past.length && atMs <= past[past.length - 1].atMs) return; // a repeat, or from behind
  past.push(sample);
  while (past.length > 1 && past[1].atMs <= atMs - windowMs) past.shift();
}

// forgetGone drops the samples of the screenings no longer in the list.
export function forgetGone() {
  for (const id of [...pastByID.keys()]) {
    if (!st.screenings.some((s) => s.id === id)) pastByID.delete(id);
  }
}

// samples is the history of screening id, oldest first (undefined when there is none yet).
export function samples(id) {
  return pastByID.get(id);
}
