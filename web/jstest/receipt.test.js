// receipt.test.js: the room's check of its receipt against the admission log (receipt.js), under Node: the
// inclusion proof folded into a root (RFC 9162, 2.1.3.2) against trees built here from the definition of
// RFC 6962 2.1, for every leaf of trees of every size up to 17; a proof changed by one byte fails; notes
// signed by Go's sumdb/note (fairlog) open with their key and with no other; and the whole check against a
// log's answers: included, a record that is not the receipt's, a receipt or a checkpoint another key
// signed, a checkpoint that grew between the two reads.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { webcrypto } from 'node:crypto';

import './fakes.js';
import { checkReceipt, openNote, parseReceipt, rootFromProof } from '../static/room/receipt.js';

const subtle = webcrypto.subtle;
const enc = new TextEncoder();

async function sha(...parts) {
  const buf = Buffer.concat(parts.map((p) => Buffer.from(p)));
  return new Uint8Array(await subtle.digest('SHA-256', buf));
}

const leafHash = (data) => sha(Uint8Array.of(0), enc.encode(data));

// mth is the Merkle tree hash of the leaf hashes (RFC 6962 2.1).
async function mth(leaves) {
  if (leaves.length === 1) return leaves[0];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return sha(Uint8Array.of(1), await mth(leaves.slice(0, k)), await mth(leaves.slice(k)));
}

// path is the audit path of leaf m (RFC 6962 2.1.1).
async function path(m, leaves) {
  if (leaves.length === 1) return [];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  if (m < k) return [...await path(m, leaves.slice(0, k)), await mth(leaves.slice(k))];
  return [...await path(m - k, leaves.slice(k)), await mth(leaves.slice(0, k))];
}

test('every leaf of every tree up to 17 folds to its root, and a changed proof does not', async () => {
  for (let n = 1; n <= 17; n++) {
    const leaves = [];
    for (let i = 0; i < n; i++) leaves.push(await leafHash(`record ${i}\n`));
    const root = await mth(leaves);
    for (let i = 0; i < n; i++) {
      const p = await path(i, leaves);
      assert.deepEqual(await rootFromProof(subtle, i, n, leaves[i], p), root, `leaf ${i} of ${n}`);
      if (p.length > 0) {
        const bad = p.map((h) => h.slice());
        bad[0][0] ^= 1;
        assert.notDeepEqual(await rootFromProof(subtle, i, n, leaves[i], bad), root, `leaf ${i} of ${n}, changed`);
      }
    }
    assert.equal(await rootFromProof(subtle, n, n, leaves[0], []), null, `leaf ${n} of ${n}`);
  }
});

// A receipt and a checkpoint signed by fairlog (Go's sumdb/note) with the key "log1:" + base64 of 32 zero
// bytes: the page must open what the server signs, byte for byte.
const goKey = 'log1+23719390+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop';
const goReceipt = 'waitroom receipt\nscreening s1\nplace 3\ntoken ab00000000000000000000000000000000000000000000000000000000000000\ntime 1700000000000\n\n\u2014 log1 I3GTkF6KfGl9EnbU7UD6KUQbNuc8YJF+LSMiMo5zYMiWZtxxGv8KCJZ4CRFpoHWPTLXwPl9X37PHppEyIZfgFOKFrww=\n';
const goCheckpoint = 'waitroom/s1\n5\nBwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\u2014 log1 I3GTkGIBIgOK38kE+RAXH91vh4Wi4Dqszlu9fWwgoU4rDfHppQ7nrwm/GTLQKhGJPPr3Y/msCQGK2ZKHelbakePTxQM=\n';

// newKey makes an Ed25519 note key named name: its verifier key and a signer of note texts, as sumdb/note
// does (the key hash: the first 4 bytes of SHA-256(name, newline, 0x01, public key)).
async function newKey(name) {
  const k = await subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify']);
  const pub = Buffer.concat([Buffer.of(1), Buffer.from(await subtle.exportKey('raw', k.publicKey))]);
  const hash = (await sha(enc.encode(name + '\n'), pub)).slice(0, 4);
  const vkey = `${name}+${Buffer.from(hash).toString('hex')}+${pub.toString('base64')}`;
  const sign = async (text) => {
    const sig = new Uint8Array(await subtle.sign({ name: 'Ed25519' }, k.privateKey, enc.encode(text)));
    return `${text}\n\u2014 ${name} ${Buffer.concat([Buffer.from(hash), Buffer.from(sig)]).toString('base64')}\n`;
  };
  return { vkey, sign };
}

test('notes signed by the server open with its key, and with no other', async () => {
  assert.equal(await openNote(goReceipt, goKey, subtle), goReceipt.slice(0, goReceipt.indexOf('\n\n') + 1));
  assert.equal(await openNote(goCheckpoint, goKey, subtle), 'waitroom/s1\n5\nBwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n');
  assert.equal(await openNote(goReceipt.replace('place 3', 'place 2'), goKey, subtle), null, 'a changed text');
  assert.equal(await openNote(goReceipt.replace('I3GTkF6K', 'I3GTkF6L'), goKey, subtle), null, 'a changed signature');
  const other = await newKey('log1');
  assert.equal(await openNote(goReceipt, other.vkey, subtle), null, 'another key of the same name');
  assert.equal(await openNote(await other.sign('hello\n'), other.vkey, subtle), 'hello\n');
  assert.equal(await openNote('hello\n', goKey, subtle), null, 'no signature');
  assert.equal(await openNote(goReceipt, 'not a key', subtle), null, 'no key');
});

const hash = 'ab'.repeat(32);
const receiptText = `waitroom receipt\nscreening s1\nplace 3\ntoken ${hash}\ntime 1700000000000\n`;

test('a receipt is read, and a pre-queue entry has no place to check yet', async () => {
  const key = await newKey('log1');
  const receipt = await key.sign(receiptText);
  assert.deepEqual(parseReceipt(receipt), { screening: 's1', place: 3, entry: 0, token: hash, time: 1700000000000 });
  assert.equal(parseReceipt('hello'), null);
  const onlyKey = async (url) => {
    assert.equal(url, '/.well-known/waitroom-log-key', 'an entry reads nothing of the log but its key');
    return { ok: true, status: 200, text: async () => key.vkey + '\n' };
  };
  assert.deepEqual(await checkReceipt(await key.sign(receiptText.replace('place 3', 'entry 3')), onlyKey, subtle), { ok: false, why: 'entry' });
  assert.deepEqual(await checkReceipt(receipt.replace('place 3', 'entry 3'), onlyKey, subtle), { ok: false, why: 'unsigned' });
});

test('the whole check against the log: included, not the receipt\'s record, signed by another key, not yet there', async () => {
  const key = await newKey('log1');
  const stranger = await newKey('log1');
  const receipt = await key.sign(receiptText);
  const records = ['place t=1 seq=1 h=' + 'cd'.repeat(32), 'place t=1 seq=2 h=' + 'ef'.repeat(32), `place t=2 seq=3 h=${hash}`, 'pause t=3', 'resume t=4'];
  const leaves = await Promise.all(records.map((r) => leafHash(r + '\n')));
  const rootOf = async (n) => Buffer.from(await mth(leaves.slice(0, n))).toString('base64');
  const proofOf = async (n) => (await path(2, leaves.slice(0, n))).map((h) => Buffer.from(h).toString('base64'));
  // log answers as a server whose checkpoints are signed by signer would; sizes lists the log's signed size
  // at each read of a proof or a checkpoint, in turn (it may grow between a proof and its checkpoint).
  const log = (record, { signer = key, sizes = [5] } = {}) => {
    let reads = 0;
    return async (url) => {
      if (url === '/.well-known/waitroom-log-key') return { ok: true, status: 200, text: async () => key.vkey + '\n' };
      const size = sizes[Math.min(reads++, sizes.length - 1)];
      if (url.endsWith('/checkpoint')) {
        const text = await signer.sign(`waitroom/s1\n${size}\n${await rootOf(size)}\n`);
        return { ok: true, status: 200, text: async () => text };
      }
      assert.equal(url, '/api/screenings/s1/log/proof?seq=3');
      return { ok: true, status: 200, json: async () => ({ index: 2, record, size, root: await rootOf(size), proof: await proofOf(size) }) };
    };
  };
  assert.deepEqual(await checkReceipt(receipt, log(records[2]), subtle), { ok: true, index: 2, size: 5 });
  assert.deepEqual(await checkReceipt(receipt, log(records[1]), subtle), { ok: false, why: 'mismatch' });
  assert.deepEqual(await checkReceipt(receipt, log(records[2].replace('t=2', 't=9')), subtle), { ok: false, why: 'mismatch' });
  assert.deepEqual(await checkReceipt(receipt, log(records[2], { signer: stranger }), subtle), { ok: false, why: 'mismatch' }, 'a checkpoint another key signed');
  assert.deepEqual(await checkReceipt(await stranger.sign(receiptText), log(records[2]), subtle), { ok: false, why: 'unsigned' });
  // The checkpoint grew from 4 to 5 records between the proof's read and its own: the proof is read again.
  assert.deepEqual(await checkReceipt(receipt, log(records[2], { sizes: [4, 5, 5] }), subtle), { ok: true, index: 2, size: 5 });
  // A proof against a tree larger than the log's signed checkpoint: a tree the log never signed.
  assert.deepEqual(await checkReceipt(receipt, log(records[2], { sizes: [5, 4] }), subtle), { ok: false, why: 'mismatch' });
  const noProof = async (url) => (url === '/.well-known/waitroom-log-key'
    ? { ok: true, status: 200, text: async () => key.vkey } : { ok: false, status: 404 });
  assert.deepEqual(await checkReceipt(receipt, noProof, subtle), { ok: false, why: 'notYet' });
});
