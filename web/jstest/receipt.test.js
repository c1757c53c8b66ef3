// receipt.test.js: the room's check of its receipt against the admission log (receipt.js), under Node: the
// inclusion proof folded into a root (RFC 9162, 2.1.3.2) against trees built here from the definition of
// RFC 6962 2.1, for every leaf of trees of every size up to 17; a proof changed by one byte fails; and the
// whole check against a log's answers, with a record that is not the receipt's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { webcrypto } from 'node:crypto';

import './fakes.js';
import { checkReceipt, parseReceipt, rootFromProof } from '../static/room/receipt.js';

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

const hash = 'ab'.repeat(32);
const receipt = `waitroom receipt\nscreening s1\nplace 3\ntoken ${hash}\ntime 1700000000000\n\n— log1 AAAA\n`;

test('a receipt is read, and a pre-queue entry has no place to check yet', async () => {
  assert.deepEqual(parseReceipt(receipt), { screening: 's1', place: 3, entry: 0, token: hash, time: 1700000000000 });
  assert.equal(parseReceipt('hello'), null);
  assert.deepEqual(await checkReceipt(receipt.replace('place 3', 'entry 3'), async () => assert.fail('no fetch')), { ok: false, why: 'entry' });
});

test('the whole check against the log: included, not the receipt\'s record, not yet there', async () => {
  const records = ['place t=1 seq=1 h=' + 'cd'.repeat(32), 'place t=1 seq=2 h=' + 'ef'.repeat(32), `place t=2 seq=3 h=${hash}`, 'pause t=3', 'resume t=4'];
  const leaves = await Promise.all(records.map((r) => leafHash(r + '\n')));
  const root = Buffer.from(await mth(leaves)).toString('base64');
  const proof = (await path(2, leaves)).map((h) => Buffer.from(h).toString('base64'));
  const log = (record) => async (url) => {
    if (url.endsWith('/checkpoint')) return { ok: true, status: 200, text: async () => `waitroom/s1\n5\n${root}\n\n— log1 AAAA\n` };
    assert.equal(url, '/api/screenings/s1/log/proof?seq=3');
    return { ok: true, status: 200, json: async () => ({ index: 2, record, size: 5, root, proof }) };
  };
  assert.deepEqual(await checkReceipt(receipt, log(records[2]), subtle), { ok: true, index: 2, size: 5 });
  assert.deepEqual(await checkReceipt(receipt, log(records[1]), subtle), { ok: false, why: 'mismatch' });
  assert.deepEqual(await checkReceipt(receipt, log(records[2].replace('t=2', 't=9')), subtle), { ok: false, why: 'mismatch' });
  assert.deepEqual(await checkReceipt(receipt, async () => ({ ok: false, status: 404 }), subtle), { ok: false, why: 'notYet' });
});
