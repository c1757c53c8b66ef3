// receipt.js: the place's signed receipt (docs/admission-log.md, "Receipts"), shown under the rank with a
// copy and a download, and checked here against the screening's public admission log: the log's proof
// (GET /api/screenings/{id}/log/proof?seq=Q) is folded with WebCrypto's SHA-256, as RFC 6962 says, and
// must give the root of the latest checkpoint, with the receipt's place and token hash in the record.

import { t } from '../i18n.js';

// parseReceipt reads the fields of a receipt's text: {screening, place, entry, token, time}; null if it is
// not one.
export function parseReceipt(text) {
  if (typeof text !== 'string') return null;
  const lines = text.split('\n');
  if (lines[0] !== 'waitroom receipt') return null;
  const out = {};
  for (const line of lines.slice(1)) {
    if (line === '') break; // the signatures follow the blank line
    const sp = line.indexOf(' ');
    if (sp < 0) return null;
    out[line.slice(0, sp)] = line.slice(sp + 1);
  }
  if (!out.screening || !out.token || !(out.place || out.entry)) return null;
  return { screening: out.screening, place: Number(out.place || 0), entry: Number(out.entry || 0), token: out.token, time: Number(out.time || 0) };
}

const enc = new TextEncoder();

function b64(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function sha256(subtle, ...parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const buf = new Uint8Array(n);
  let i = 0;
  for (const p of parts) { buf.set(p, i); i += p.length; }
  return new Uint8Array(await subtle.digest('SHA-256', buf));
}

function equal(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// rootFromProof folds an inclusion proof of the leaf at index in a tree of size into the root it implies
// (RFC 9162, 2.1.3.2); null when the proof has the wrong length.
export async function rootFromProof(subtle, index, size, leafHash, proof) {
  if (index < 0 || index >= size) return null;
  let fn = index;
  let sn = size - 1;
  let r = leafHash;
  for (const p of proof) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = await sha256(subtle, Uint8Array.of(1), p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
      }
    } else {
      r = await sha256(subtle, Uint8Array.of(1), r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

// checkReceipt checks a receipt of a place in the line against the log: {ok: true, index, size} or
// {ok: false, why}. A pre-queue entry's receipt has no place yet to check ({ok: false, why: 'entry'}).
export async function checkReceipt(receipt, fetchImpl = fetch, subtle = crypto.subtle) {
  const r = parseReceipt(receipt);
  if (!r) return { ok: false, why: 'unreadable' };
  if (!r.place) return { ok: false, why: 'entry' };
  const res = await fetchImpl(`/api/screenings/${encodeURIComponent(r.screening)}/log/proof?seq=${r.place}`);
  if (res.status === 404 || res.status === 202) return { ok: false, why: 'notYet' };
  if (!res.ok) return { ok: false, why: 'unavailable' };
  const p = await res.json();
  const fields = String(p.record).split(' ');
  if (fields[0] !== 'place' || !fields.includes(`seq=${r.place}`) || !fields.includes(`h=${r.token}`)) return { ok: false, why: 'mismatch' };
  const leaf = await sha256(subtle, Uint8Array.of(0), enc.encode(p.record + '\n'));
  const root = await rootFromProof(subtle, p.index, p.size, leaf, (p.proof || []).map(b64));
  if (!root || !equal(root, b64(p.root))) return { ok: false, why: 'mismatch' };
  // The root the proof gives must be the one the log signed: its latest checkpoint's, if it has not grown.
  const cp = await fetchImpl(`/api/screenings/${encodeURIComponent(r.screening)}/log/checkpoint`);
  if (cp.ok) {
    const lines = (await cp.text()).split('\n');
    if (Number(lines[1]) === p.size && lines[2] !== p.root) return { ok: false, why: 'mismatch' };
  }
  return { ok: true, index: p.index, size: p.size };
}

// describe is what the page says of a check's result.
export function describe(result) {
  if (result.ok) return t('receipt.included', { index: result.index + 1, size: result.size });
  return t(`receipt.${result.why}`);
}

let shown = '';
let checks = 0;
let timer = 0;

// showReceipt puts a receipt on the page (once per receipt: a reconnect's is the same), and checks it
// against the log, again a few times while the log has not caught up with it.
export function showReceipt(text, el) {
  if (typeof text !== 'string' || !text || text === shown) return;
  shown = text;
  checks = 0;
  el.receipt.hidden = false;
  el.receiptText.textContent = text;
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
  if (el.receiptDownload.href.startsWith('blob:')) URL.revokeObjectURL(el.receiptDownload.href);
  el.receiptDownload.href = url;
  el.receiptCopy.onclick = () => {
    navigator.clipboard.writeText(text).then(() => { el.receiptStatus.textContent = t('receiptCopied'); }, () => {});
  };
  clearTimeout(timer);
  // The log signs a checkpoint about every second: a place just taken is in it a moment later.
  el.receiptStatus.dataset.state = 'checking';
  el.receiptStatus.textContent = t('receipt.checking');
  timer = setTimeout(() => check(text, el), 1200);
}

async function check(text, el) {
  el.receiptStatus.dataset.state = 'checking';
  el.receiptStatus.textContent = t('receipt.checking');
  let result;
  try {
    result = await checkReceipt(text);
  } catch {
    result = { ok: false, why: 'unavailable' };
  }
  if (text !== shown) return; // another receipt since
  el.receiptStatus.dataset.state = result.ok ? 'included' : result.why;
  el.receiptStatus.textContent = describe(result);
  if (!result.ok && (result.why === 'notYet' || result.why === 'unavailable') && ++checks < 10) {
    timer = setTimeout(() => check(text, el), 1500);
  }
}
