// vectors.mjs makes the reference vectors the Go tests check package altcha against, with ALTCHA's own
// server library, altcha-lib 2.8.0: challenges created, solved and verified by it (vectors.json), the
// canonical JSON it signs (also vectors.json), and the solution of the challenge Go made
// (go-challenge.json, written by `go test ./altcha -run TestGoChallengeFile -update`) found and verified by
// it (go-solution.json).
//
// Run it from the repository's root, with altcha-lib installed anywhere outside the repository:
//
//	npm install --prefix /tmp/altcha-ref altcha-lib@2.8.0
//	ALTCHA_LIB=/tmp/altcha-ref/node_modules/altcha-lib node altcha/testdata/vectors.mjs
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const lib = process.env.ALTCHA_LIB;
if (!lib) {
  console.error('set ALTCHA_LIB to the altcha-lib@2.8.0 directory (see the header)');
  process.exit(2);
}
const version = JSON.parse(readFileSync(join(lib, 'package.json'), 'utf8')).version;
if (version !== '2.8.0') {
  console.error(`altcha-lib ${version}, want 2.8.0`);
  process.exit(2);
}
const altcha = await import(join(lib, 'dist/esm/v2/index.js'));
const pbkdf2 = await import(join(lib, 'dist/esm/v2/algorithms/pbkdf2.js'));
const sha = await import(join(lib, 'dist/esm/v2/algorithms/sha.js'));
const helpers = await import(join(lib, 'dist/esm/v2/helpers.js'));
const here = dirname(fileURLToPath(import.meta.url));

const secrets = { signature: 'waitroom-vector-signature-secret', keySignature: 'waitroom-vector-key-secret' };
const farFuture = 4102444800; // 2100-01-01T00:00:00Z
const deriveKeyOf = (algorithm) => (algorithm.startsWith('PBKDF2/') ? pbkdf2.deriveKey : sha.deriveKey);

const cases = [
  { name: 'deterministic PBKDF2/SHA-256', algorithm: 'PBKDF2/SHA-256', cost: 1000, counter: 37,
    data: { screening: 'scr-1' }, expiresAt: farFuture, keySignature: true },
  { name: 'deterministic PBKDF2/SHA-256 without data or expiry', algorithm: 'PBKDF2/SHA-256', cost: 100,
    counter: 5, keySignature: true },
  { name: 'deterministic SHA-256', algorithm: 'SHA-256', cost: 10, counter: 123,
    data: { screening: 'scr-2' }, expiresAt: farFuture, keySignature: true },
  { name: 'prefix 0 PBKDF2/SHA-256', algorithm: 'PBKDF2/SHA-256', cost: 100, keyPrefix: '0',
    data: { screening: 'scr-3' }, expiresAt: farFuture },
  { name: 'prefix 00 PBKDF2/SHA-256', algorithm: 'PBKDF2/SHA-256', cost: 50, keyPrefix: '00',
    data: { screening: 'scr-4' }, expiresAt: farFuture },
  { name: 'prefix 00 SHA-256', algorithm: 'SHA-256', cost: 3, keyPrefix: '00',
    data: { screening: 'scr-5' }, expiresAt: farFuture },
  { name: 'prefix 0 SHA-512', algorithm: 'SHA-512', cost: 2, keyPrefix: '0', expiresAt: farFuture },
  { name: 'prefix 0 SHA-384', algorithm: 'SHA-384', cost: 1, keyPrefix: '0', keyLength: 48 },
  { name: 'prefix 0 PBKDF2/SHA-512', algorithm: 'PBKDF2/SHA-512', cost: 20, keyPrefix: '0', expiresAt: farFuture },
  { name: 'prefix 0 PBKDF2/SHA-384', algorithm: 'PBKDF2/SHA-384', cost: 20, keyPrefix: 'A' },
  { name: 'Latin-1 data', algorithm: 'PBKDF2/SHA-256', cost: 100, counter: 9, keySignature: true,
    data: { screening: 'café', 'zürich': 'ÿ', a: 'x' }, expiresAt: farFuture },
  { name: 'awkward data', algorithm: 'PBKDF2/SHA-256', cost: 100, counter: 2, keySignature: true,
    data: { screening: 'q"b\\s<x>&y\u2028z\u2029\u00e9\u4e2d\ud83c\udfac\n\t\u0001', b: '1', a: '2', 10: 'ten',
      2: 'two', 'é': 'e', '\ud83c\udfac': 'clapper', '\uffff': 'last bmp', n: 7, t: true, z: null },
    expiresAt: farFuture },
];

const vectors = [];
for (const c of cases) {
  const deriveKey = deriveKeyOf(c.algorithm);
  const challenge = await altcha.createChallenge({
    algorithm: c.algorithm, cost: c.cost, counter: c.counter, data: c.data, expiresAt: c.expiresAt,
    keyLength: c.keyLength, keyPrefix: c.keyPrefix, deriveKey,
    hmacSignatureSecret: secrets.signature,
    hmacKeySignatureSecret: c.keySignature ? secrets.keySignature : undefined,
  });
  const solution = await altcha.solveChallenge({ challenge, deriveKey });
  const withKey = await altcha.verifySolution({ challenge, solution, deriveKey,
    hmacSignatureSecret: secrets.signature, hmacKeySignatureSecret: secrets.keySignature });
  const rederived = await altcha.verifySolution({ challenge, solution, deriveKey,
    hmacSignatureSecret: secrets.signature });
  if (!withKey.verified || !rederived.verified) {
    throw new Error(`${c.name}: altcha-lib does not verify its own solution`);
  }
  if (c.counter !== undefined && solution.counter !== c.counter) {
    throw new Error(`${c.name}: solved at ${solution.counter}, not the secret ${c.counter}`);
  }
  // What the widget sends; btoa cannot carry characters beyond Latin-1, so such a challenge has none.
  let payload = null;
  try {
    payload = btoa(JSON.stringify({ challenge: { parameters: challenge.parameters, signature: challenge.signature }, solution }));
  } catch { /* InvalidCharacterError */ }
  vectors.push({ name: c.name, counter: c.counter ?? null, challenge, solution, payload,
    canonical: helpers.canonicalJSON(challenge.parameters) });
}

// canonicalJSON of values parsed from JSON texts: what the signature covers, key order and all.
const canonicalInputs = [
  '{"b":1,"a":2}',
  '{"10":"a","2":"b","1a":"c","01":"d","-1":"e","4294967295":"f","4294967294":"g","":"h"}',
  '{"z":[{"b":1,"a":2},[3,{"d":4,"c":5}]],"y":{"b":{"d":1,"c":2},"a":null}}',
  '{"s":"quote\\" backslash\\\\ lt< gt> amp& nl\\n tab\\t cr\\r bs\\b ff\\f nul\\u0000 us\\u001f del\\u007f"}',
  '{"s":"\\u2028\\u2029 é 中 🎬 \\uffff \\ud83c\\udfac"}',
  '{"é":1,"e":2,"\\uffff":3,"🎬":4,"Z":5,"a":6}',
  '{"n":[0,-0,1,-1,1.5,0.1,100,1e21,1e20,123456789012345680000,1.5e-7,0.000001,1e-7,1e300,-2.5e-10,9007199254740993,5e-324,1.7976931348623157e308,3.0,2e0]}',
  '{"dup":1,"other":true,"dup":2}',
  '{"t":true,"f":false,"n":null,"e":{},"a":[]}',
];
const canonical = canonicalInputs.map((input) => ({ input, canonical: helpers.canonicalJSON(JSON.parse(input)) }));

writeFileSync(join(here, 'vectors.json'), JSON.stringify({
  generator: `altcha-lib ${version}, node ${process.version}`, secrets, vectors, canonical }, null, 2) + '\n');
console.log(`vectors.json: ${vectors.length} challenges, ${canonical.length} canonical cases`);

// The other way round: a challenge Go created, solved and verified here.
const goFile = join(here, 'go-challenge.json');
if (existsSync(goFile)) {
  const go = JSON.parse(readFileSync(goFile, 'utf8'));
  const deriveKey = deriveKeyOf(go.challenge.parameters.algorithm);
  const solution = await altcha.solveChallenge({ challenge: go.challenge, deriveKey });
  const withKey = await altcha.verifySolution({ challenge: go.challenge, solution, deriveKey,
    hmacSignatureSecret: go.secrets.signature, hmacKeySignatureSecret: go.secrets.keySignature });
  const rederived = await altcha.verifySolution({ challenge: go.challenge, solution, deriveKey,
    hmacSignatureSecret: go.secrets.signature });
  if (!withKey.verified || !rederived.verified) {
    throw new Error(`altcha-lib refuses the Go challenge: ${JSON.stringify({ withKey, rederived })}`);
  }
  const payload = btoa(JSON.stringify({ challenge: go.challenge, solution }));
  writeFileSync(join(here, 'go-solution.json'), JSON.stringify({
    generator: `altcha-lib ${version}, node ${process.version}`,
    verifiedWithKeySignature: withKey.verified, verifiedByRederiving: rederived.verified, solution, payload,
  }, null, 2) + '\n');
  console.log(`go-solution.json: counter ${solution.counter}, verified`);
}
