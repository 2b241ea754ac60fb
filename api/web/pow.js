// seckill's proof of work in the browser (docs/API.md "Proof of work"):
// fetch an ALTCHA challenge for a sale, solve it in Web Workers
// (pow-worker.js, one per core up to 4), and give the X-Seckill-Proof
// header's value. No build step, no dependency.
//
//   await seckillProof(saleId)     -> header value, or null for a sale
//                                     that needs no proof; each is
//                                     accepted once, so ask for a new one
//                                     per request (claim, waitlist join,
//                                     lobby entry).
//   seckillProof.prepare(saleId)   -> start solving the next one now, in
//                                     the background (while the buyer
//                                     waits for the start), so the click
//                                     finds it ready.
//   seckillProof.ready(saleId)     -> whether one is solved and waiting.
//   seckillProof.solve(challenge[, {workers, engine}])
//                                  -> {number, took} for an ALTCHA
//                                     challenge object (engine: see
//                                     pow-worker.js).
//   seckillProof.header(challenge, solution) -> the header value.
//
// The token is the shop page's (localStorage "seckill.token") unless
// opts.token is given.
"use strict";

(() => {
  const WORKER = "/assets/pow-worker.js";
  // A prepared solution is not used this close to its expiry.
  const MARGIN_MS = 15000;

  function concurrency() {
    return Math.max(1, Math.min(navigator.hardwareConcurrency || 1, 4));
  }

  // solve searches [0, maxnumber] of challenge c in workers parts.
  function solve(c, opts = {}) {
    const parts = opts.workers || concurrency();
    const max = c.maxnumber;
    const step = Math.ceil((max + 1) / parts);
    const t0 = performance.now();
    return new Promise((resolve, reject) => {
      const workers = [];
      let left = parts;
      let done = false;
      const finish = (err, value) => {
        if (done) return;
        done = true;
        for (const w of workers) w.terminate();
        if (err) reject(err); else resolve(value);
      };
      for (let i = 0; i < parts; i++) {
        const w = new Worker(opts.worker || WORKER);
        workers.push(w);
        w.onmessage = (e) => {
          if (e.data.error) finish(new Error("Your browser cannot solve the shop's puzzle: " + e.data.error + "."));
          else if (e.data.number !== null) finish(null, { number: e.data.number, took: Math.round(performance.now() - t0) });
          else if (--left === 0) finish(new Error("No number solves the shop's puzzle."));
        };
        w.onerror = (e) => finish(new Error("The shop's puzzle solver failed: " + (e.message || "unknown error") + "."));
        w.postMessage({ challenge: c.challenge, salt: c.salt, start: i * step, end: Math.min(max, (i + 1) * step - 1),
          engine: opts.engine, batch: opts.batch });
      }
    });
  }

  // header is ALTCHA's payload, as its widget sends it.
  function header(c, s) {
    return btoa(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number: s.number,
      salt: c.salt, signature: c.signature, took: s.took }));
  }

  function expiresAt(c) {
    const q = new URLSearchParams(c.salt.split("?")[1] || "");
    const s = parseInt(q.get("expires") || "0", 10);
    return s > 0 ? s * 1000 : Infinity;
  }

  // fetchChallenge resolves the sale's challenge, null when the sale needs
  // none (404 NOT_FOUND), or rejects with the problem.
  async function fetchChallenge(saleId, token) {
    const res = await fetch("/api/v1/sales/" + encodeURIComponent(saleId) + "/challenge", {
      headers: token ? { Authorization: "Bearer " + token } : {},
    });
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (res.ok) return body;
    if (res.status === 404 && body && body.code === "NOT_FOUND") return null;
    const err = new Error((body && body.detail) || "The shop's puzzle could not be fetched (HTTP " + res.status + ").");
    err.status = res.status;
    err.code = body && body.code;
    err.body = body || {};
    throw err;
  }

  // one fetches and solves one challenge: {value, expires}.
  async function one(saleId, token) {
    const c = await fetchChallenge(saleId, token);
    if (!c) return { value: null, expires: Infinity };
    const s = await solve(c);
    return { value: header(c, s), expires: expiresAt(c) };
  }

  // prepared: one solution in the making or made, per sale and token.
  const prepared = new Map();
  const slot = (saleId, token) => saleId + " " + (token || "");
  const tokenOf = (opts) => (opts && opts.token) || localStorage.getItem("seckill.token");

  function prepare(saleId, opts) {
    const token = tokenOf(opts);
    const k = slot(saleId, token);
    if (!prepared.has(k)) {
      const p = { done: false, result: null, promise: null };
      p.promise = one(saleId, token).then(
        (r) => { p.done = true; p.result = r; return r; },
        (e) => { prepared.delete(k); throw e; });
      p.promise.catch(() => {}); // a failed preparation is tried again on use
      prepared.set(k, p);
    }
    return prepared.get(k).promise;
  }

  function ready(saleId, opts) {
    const p = prepared.get(slot(saleId, tokenOf(opts)));
    return !!(p && p.done && p.result.expires - Date.now() > MARGIN_MS);
  }

  async function seckillProof(saleId, opts) {
    const token = tokenOf(opts);
    const k = slot(saleId, token);
    const p = prepared.get(k);
    if (p) {
      prepared.delete(k); // each solution is used once
      try {
        const r = await p.promise;
        if (r.expires - Date.now() > MARGIN_MS) return r.value;
      } catch (e) { /* fetch a fresh one below */ }
    }
    return (await one(saleId, token)).value;
  }

  seckillProof.prepare = prepare;
  seckillProof.ready = ready;
  seckillProof.solve = solve;
  seckillProof.header = header;
  seckillProof.fetchChallenge = fetchChallenge;
  self.seckillProof = seckillProof;
})();
