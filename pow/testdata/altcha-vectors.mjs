// Generates altcha-v1.json, the test vectors of package pow, with ALTCHA's
// own server library: altcha-lib 2.8.0 (npm), its v1 API (SHA-256,
// HMAC-signed challenge). Not run by the tests; to regenerate:
//
//	cd "$(mktemp -d)" && npm pack altcha-lib@2.8.0 && tar xzf altcha-lib-2.8.0.tgz
//	node /path/to/pow/testdata/altcha-vectors.mjs "$PWD/package" > /path/to/pow/testdata/altcha-v1.json
//
// solveChallenge's "took" varies from run to run; everything else is fixed.
const lib = await import(process.argv[2] + '/dist/esm/v1/index.js');
const version = JSON.parse(await (await import('node:fs/promises')).readFile(process.argv[2] + '/package.json', 'utf8')).version;

const hmacKey = 'seckill-test-vector-key';
const cases = [
  // altcha-lib-go's v1 test: SHA-256("salt123"); altcha-lib 2 appends the
  // "&" delimiter to a salt that lacks one, so the hash is of "salt&123".
  { name: 'plain salt', salt: 'salt', number: 123, maxnumber: 100000 },
  { name: 'number zero', salt: '00112233445566778899aabb', number: 0, maxnumber: 1000 },
  { name: 'number at maxnumber', salt: 'ffeeddccbbaa998877665544', number: 1000, maxnumber: 1000 },
  // seckill's own form: random hex, then the sale, the user's hash and the
  // expiry as parameters (createChallenge puts expires last).
  { name: 'seckill salt', salt: '0123456789abcdef01234567', params: { sale: '42', user: '8c6976e5b5410415' },
    expires: 1767225600, number: 54321, maxnumber: 100000 },
  { name: 'seckill salt, large sale id', salt: 'a1b2c3d4e5f60718293a4b5c', params: { sale: '9223372036854775807', user: '0000000000000000' },
    expires: 4102444800, number: 9999999, maxnumber: 10000000 },
];

const out = { generator: `altcha-lib ${version} (npm), v1 API, Node ${process.version}`, hmac_key: hmacKey, challenges: [], solutions: [] };
for (const c of cases) {
  const ch = await lib.createChallenge({ hmacKey, salt: c.salt, number: c.number, maxnumber: c.maxnumber, params: c.params,
    expires: c.expires ? new Date(c.expires * 1000) : undefined });
  out.challenges.push({ name: c.name, salt_in: c.salt, params: c.params || {}, expires: c.expires || 0, number: c.number, maxnumber: c.maxnumber,
    algorithm: ch.algorithm, challenge: ch.challenge, salt: ch.salt, signature: ch.signature });
  if (c.maxnumber > 200000) continue; // solving takes too long here
  const { promise } = lib.solveChallenge(ch.challenge, ch.salt, ch.algorithm, ch.maxnumber);
  const sol = await promise;
  // The payload as ALTCHA's widget sends it: btoa(JSON.stringify(...)).
  const payload = btoa(JSON.stringify({ algorithm: ch.algorithm, challenge: ch.challenge, number: sol.number, salt: ch.salt, signature: ch.signature, took: sol.took }));
  const tampered = btoa(JSON.stringify({ algorithm: ch.algorithm, challenge: ch.challenge, number: sol.number + 1, salt: ch.salt, signature: ch.signature }));
  out.solutions.push({ name: c.name, payload, number: sol.number, valid: await lib.verifySolution(payload, hmacKey, false),
    tampered_payload: tampered, tampered_valid: await lib.verifySolution(tampered, hmacKey, false),
    wrong_key_valid: await lib.verifySolution(payload, hmacKey + 'x', false) });
}
console.log(JSON.stringify(out, null, 2));
