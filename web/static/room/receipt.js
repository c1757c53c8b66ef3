// receipt.js: the place's signed receipt (docs/admission-log.md, "Receipts"), shown under the rank with a
// copy and a download, and checked here against the screening's public admission log: the receipt's and the
// latest checkpoint's Ed25519 signatures by the log's key (/.well-known/waitroom-log-key, a sumdb note
// verifier key) with WebCrypto, then the log's proof (GET /api/screenings/{id}/log/proof?seq=Q) folded with
// WebCrypto's SHA-256, as RFC 6962 says, which must give the signed checkpoint's root, with the receipt's
// place and token hash in the record.

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

// hex is bytes as lowercase hex.
function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// openNote checks a signed note (golang.org/x/mod/sumdb/note) against an Ed25519 verifier key,
// "<name>+<key hash, 8 hex digits>+<base64 of 0x01 and the 32-byte public key>", and returns its text (every
// line before the blank line, each with its newline), or null when no signature of that key verifies.
export async function openNote(msg, vkey, subtle = crypto.subtle) {
  if (typeof msg !== 'string' || typeof vkey !== 'string') return null;
  // The name and the hash hold no '+'; the base64 key may.
  const [name, keyHash, ...rest] = vkey.trim().split('+');
  const keyText = rest.join('+');
  if (!name || !/^[0-9a-f]{8}$/.test(keyHash || '') || !keyText) return null;
  let key;
  try { key = b64(keyText); } catch { return null; }
  if (key.length !== 33 || key[0] !== 1) return null; // 1: Ed25519, the only algorithm notes have
  const end = msg.indexOf('\n\n');
  if (end < 0) return null;
  const text = msg.slice(0, end + 1);
  const pub = await subtle.importKey('raw', key.slice(1), { name: 'Ed25519' }, false, ['verify']);
  for (const line of msg.slice(end + 2).split('\n')) {
    if (!line.startsWith('\u2014 ')) continue;
    const [who, sigText] = line.slice(2).split(' ');
    if (who !== name || !sigText) continue;
    let sig;
    try { sig = b64(sigText); } catch { continue; }
    // A signature is the key's 4-byte hash, then the 64-byte Ed25519 signature of the text.
    if (sig.length !== 68 || hex(sig.slice(0, 4)) !== keyHash) continue;
    if (await subtle.verify({ name: 'Ed25519' }, pub, sig.slice(4), enc.encode(text))) return text;
  }
  return null;
}

// checkpointTries bounds the reads of a proof and its checkpoint: the log signs a new checkpoint about
// every second, so the two reads can straddle one; the next pair meets.
const checkpointTries = 3;

// checkReceipt checks a receipt of a place in the line against the log: {ok: true, index, size} or
// {ok: false, why}: the receipt and the checkpoint must be signed by the log's key, and the checkpoint's root
// must be the one the place's proof gives. A pre-queue entry's receipt has no place yet to check ({ok: false,
// why: 'entry'}).
export async function checkReceipt(receipt, fetchImpl = fetch, subtle = crypto.subtle) {
  const r = parseReceipt(receipt);
  if (!r) return { ok: false, why: 'unreadable' };
  const keyRes = await fetchImpl('/.well-known/waitroom-log-key');
  if (!keyRes.ok) return { ok: false, why: 'unavailable' };
  const vkey = (await keyRes.text()).trim();
  if (await openNote(receipt, vkey, subtle) === null) return { ok: false, why: 'unsigned' };
  if (!r.place) return { ok: false, why: 'entry' };
  const screening = encodeURIComponent(r.screening);
  for (let i = 0; i < checkpointTries; i++) {
    const res = await fetchImpl(`/api/screenings/${screening}/log/proof?seq=${r.place}`);
    if (res.status === 404 || res.status === 202) return { ok: false, why: 'notYet' };
    if (!res.ok) return { ok: false, why: 'unavailable' };
    const p = await res.json();
    const fields = String(p.record).split(' ');
    if (fields[0] !== 'place' || !fields.includes(`seq=${r.place}`) || !fields.includes(`h=${r.token}`)) return { ok: false, why: 'mismatch' };
    const leaf = await sha256(subtle, Uint8Array.of(0), enc.encode(p.record + '\n'));
    const root = await rootFromProof(subtle, p.index, p.size, leaf, (p.proof || []).map(b64));
    if (!root || !equal(root, b64(p.root))) return { ok: false, why: 'mismatch' };
    // The root the proof gives must be the one the log signed.
    const cp = await fetchImpl(`/api/screenings/${screening}/log/checkpoint`);
    if (!cp.ok) return { ok: false, why: 'unavailable' };
    const text = await openNote(await cp.text(), vkey, subtle);
    if (text === null) return { ok: false, why: 'mismatch' };
    const lines = text.split('\n');
    if (lines[0] !== `waitroom/${r.screening}`) return { ok: false, why: 'mismatch' };
    const size = Number(lines[1]);
    if (size === p.size) {
      if (lines[2] !== p.root) return { ok: false, why: 'mismatch' };
      return { ok: true, index: p.index, size: p.size };
    }
    if (size < p.size) return { ok: false, why: 'mismatch' }; // a proof against a tree the log never signed
    // The log signed a newer checkpoint between the two reads: read the proof again, against it.
  }
  return { ok: false, why: 'notYet' };
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
