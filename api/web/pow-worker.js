// seckill's proof-of-work worker: finds the number of an ALTCHA challenge
// (docs/API.md "Proof of work"): the n in [start, end] whose hex SHA-256
// of salt + n (in decimal) is the challenge. pow.js starts one per core,
// each on its part of the range.
//
// Two ways to hash:
// - "js": SHA-256 in plain JavaScript, the salt's whole 64-byte blocks
//   hashed once (a midstate), so each candidate costs one or two block
//   compressions and no allocation or promise. Measured in headless
//   Chromium about 50 times the rate of crypto.subtle (docs/FAIR-START.md
//   "Proof of work"), and it works where crypto.subtle does not (a page not on
//   HTTPS). A number it finds is checked with crypto.subtle, when there is
//   one, before it is sent; should it find none, the part is searched
//   again with crypto.subtle.
// - "subtle": the browser's crypto.subtle.digest, many digests in flight
//   at once (batch), since each await costs more than its hash.
//
// In:  {challenge, salt, start, end[, engine: "auto"|"js"|"subtle", batch]}
// Out: {number, hashes} when found; {number: null, hashes} when the part
//      holds no solution; {error} when it cannot hash.
"use strict";

const encoder = new TextEncoder();

function hexBytes(hex) {
  const b = new Uint8Array(hex.length / 2);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(hex.substr(2 * i, 2), 16);
  return b;
}

function toHex(bytes) {
  let s = "";
  for (const x of new Uint8Array(bytes)) s += (x < 16 ? "0" : "") + x.toString(16);
  return s;
}

// writeDigits writes n in decimal into buf at off and returns the end.
function writeDigits(buf, off, n) {
  if (n === 0) { buf[off] = 48; return off + 1; }
  let len = 0;
  for (let m = n; m > 0; m = Math.floor(m / 10)) len++;
  for (let i = off + len - 1; i >= off; i--) { buf[i] = 48 + (n % 10); n = Math.floor(n / 10); }
  return off + len;
}

// --- SHA-256 in JavaScript (FIPS 180-4) ------------------------------------

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const IV = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
const W = new Int32Array(64);

// compress hashes the 64-byte block of bytes at off into state H, in place.
function compress(H, bytes, off) {
  for (let i = 0; i < 16; i++) {
    const j = off + 4 * i;
    W[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
  }
  for (let i = 16; i < 64; i++) {
    const x = W[i - 15], y = W[i - 2];
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
  }
  H[0] = (H[0] + a) | 0; H[1] = (H[1] + b) | 0; H[2] = (H[2] + c) | 0; H[3] = (H[3] + d) | 0;
  H[4] = (H[4] + e) | 0; H[5] = (H[5] + f) | 0; H[6] = (H[6] + g) | 0; H[7] = (H[7] + h) | 0;
}

// searchJS tries start..end with the midstate of the salt's whole blocks.
function searchJS(salt, want, start, end) {
  const full = salt.length - (salt.length % 64);
  const mid = IV.slice();
  for (let off = 0; off < full; off += 64) compress(mid, salt, off);
  const tail = salt.subarray(full);
  const buf = new Uint8Array(128); // the tail, the digits, the padding: one or two blocks
  buf.set(tail);
  const wantWords = new Int32Array(8);
  for (let i = 0; i < 8; i++) wantWords[i] = (want[4 * i] << 24) | (want[4 * i + 1] << 16) | (want[4 * i + 2] << 8) | want[4 * i + 3];
  const H = new Int32Array(8);
  for (let n = start; n <= end; n++) {
    const stop = writeDigits(buf, tail.length, n);
    const blocks = stop + 9 <= 64 ? 1 : 2;
    buf.fill(0, stop, blocks * 64);
    buf[stop] = 0x80;
    const bits = (full + stop) * 8; // under 2^32: salts are short
    const last = blocks * 64;
    buf[last - 4] = bits >>> 24; buf[last - 3] = bits >>> 16; buf[last - 2] = bits >>> 8; buf[last - 1] = bits;
    H.set(mid);
    compress(H, buf, 0);
    if (blocks === 2) compress(H, buf, 64);
    if (H[0] === wantWords[0] && H[1] === wantWords[1] && H[2] === wantWords[2] && H[3] === wantWords[3] &&
        H[4] === wantWords[4] && H[5] === wantWords[5] && H[6] === wantWords[6] && H[7] === wantWords[7]) {
      return { number: n, hashes: n - start + 1 };
    }
  }
  return { number: null, hashes: end - start + 1 };
}

// searchSubtle tries start..end with crypto.subtle, batch digests at once.
async function searchSubtle(subtle, salt, want, start, end, batch) {
  // One buffer for every candidate: digest() copies its input before it
  // returns (Web Crypto: "get a copy of the bytes").
  const buf = new Uint8Array(salt.length + 20);
  buf.set(salt);
  const pending = new Array(batch);
  let hashes = 0;
  for (let base = start; base <= end; base += batch) {
    const count = Math.min(batch, end - base + 1);
    for (let i = 0; i < count; i++) {
      pending[i] = subtle.digest("SHA-256", buf.subarray(0, writeDigits(buf, salt.length, base + i)));
    }
    for (let i = 0; i < count; i++) {
      const d = new Uint8Array(await pending[i]);
      let same = true;
      for (let j = 0; j < 32 && same; j++) same = d[j] === want[j];
      if (same) return { number: base + i, hashes: hashes + i + 1 };
    }
    hashes += count;
  }
  return { number: null, hashes };
}

self.onmessage = async (e) => {
  const { challenge, salt, start, end } = e.data;
  const engine = e.data.engine || "auto";
  const subtle = self.crypto && self.crypto.subtle;
  const want = hexBytes(challenge);
  const saltBytes = encoder.encode(salt);
  if (engine === "subtle") {
    if (!subtle) { self.postMessage({ error: "this browser has no crypto.subtle here (the page needs HTTPS)" }); return; }
    self.postMessage(await searchSubtle(subtle, saltBytes, want, start, end, e.data.batch || 1000));
    return;
  }
  const found = searchJS(saltBytes, want, start, end);
  if (engine === "js" || !subtle) { self.postMessage(found); return; }
  if (found.number !== null) {
    const check = toHex(await subtle.digest("SHA-256", encoder.encode(salt + found.number)));
    if (check === challenge) { self.postMessage(found); return; }
  }
  // Not found, or found wrongly: the browser's own SHA-256 decides.
  const again = await searchSubtle(subtle, saltBytes, want, start, end, e.data.batch || 1000);
  again.hashes += found.hashes;
  self.postMessage(again);
};
