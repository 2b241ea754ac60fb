// seckill's shopper pages: plain JavaScript against the public API
// (docs/API.md), no build step. The token lives in localStorage; the order's
// live status comes from GET /api/v1/orders/{id}/events, read with fetch so
// the Authorization header can be sent (EventSource cannot send it).
"use strict";

const Seckill = (() => {
  const $ = (id) => document.getElementById(id);
  const TOKEN = "seckill.token";
  const USER = "seckill.user";

  // Words a shopper understands, for the API's error codes.
  const problems = {
    SOLD_OUT: "Sold out. Units come back when someone does not pay, so try again in a moment.",
    NOT_ENOUGH_STOCK: "Fewer units are left than you asked for: choose fewer.",
    ALREADY_CLAIMED: "You already have an order for this sale.",
    SALE_NOT_STARTED: "The sale has not started yet.",
    SALE_ENDED: "The sale has ended.",
    SALE_NOT_FOUND: "This sale does not exist.",
    ORDER_NOT_FOUND: "We could not find that order.",
    ORDER_NOT_CANCELLABLE: "This order can no longer be cancelled.",
    RATE_LIMITED: "Too many tries. Please wait a few seconds.",
    WAITLIST_FULL: "The waitlist is full: a place opens when someone in line leaves it or is given a unit.",
    ALREADY_WAITING: "You are already on the waitlist.",
    UNAVAILABLE: "The shop is busy right now. Please try again in a few seconds.",
    UNAUTHENTICATED: "Please sign in again.",
    FORBIDDEN: "You are not allowed to do that.",
    PROOF_REQUIRED: "The shop could not check this browser's anti-bot puzzle. Please try again.",
    DRAW_IN_PROGRESS: "The draw is running. Please try again in a few seconds.",
    LOBBY_CLOSED: "The lobby closed at the start: the draw has begun.",
    LOBBY_NOT_OPEN: "The lobby is not open yet.",
  };

  // QUEUED and AWAITING_PAYMENT read alike: both are payable, and the
  // difference (whether the order's saga has written it yet) is the shop's,
  // not the buyer's (README "Try it in a browser").
  const statusWords = {
    QUEUED: "Reserved for you: waiting for payment",
    AWAITING_PAYMENT: "Reserved for you: waiting for payment",
    PAID: "Paid. It is yours!",
    CLOSED: "Closed",
  };

  const closeWords = {
    PAYMENT_TIMEOUT: "The time to pay ran out, and the unit went back on sale.",
    CANCELLED: "You cancelled the order, and the unit went back on sale.",
    PAYMENT_FAILED: "The payment failed, and the unit went back on sale.",
    SOLD_OUT: "Sorry, the last unit went to someone else.",
  };

  class Problem extends Error {
    constructor(status, body) {
      super((body && problems[body.code]) || (body && body.detail) || `Something went wrong (HTTP ${status}).`);
      this.status = status;
      this.code = body && body.code;
      this.body = body || {};
    }
  }

  function token() { return localStorage.getItem(TOKEN); }

  // holds reports whether the signed-in token carries claim, written as a
  // sale's presale.claim ("/groups=vip": the JSON Pointer's value is, or
  // holds, "vip"). Only what the page shows: the API decides.
  function holds(claim) {
    const t = token(), eq = claim.indexOf("=");
    if (!t || eq < 0) return false;
    let at;
    try { at = JSON.parse(atob(t.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))); } catch (e) { return false; }
    for (const key of claim.slice(1, eq).split("/")) {
      if (at === null || typeof at !== "object" || Array.isArray(at)) return false;
      at = at[key.replace(/~1/g, "/").replace(/~0/g, "~")];
    }
    const value = claim.slice(eq + 1);
    return at === value || (Array.isArray(at) && at.includes(value));
  }
  function user() { return localStorage.getItem(USER); }

  async function api(method, path, opts = {}) {
    const headers = Object.assign({}, opts.headers);
    if (token()) headers.Authorization = "Bearer " + token();
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    let res;
    try {
      res = await fetch(path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
    } catch (e) {
      throw new Problem(0, { detail: "The shop cannot be reached. Check your connection and try again." });
    }
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    if (!res.ok) {
      if (res.status === 401) signOut(false);
      throw new Problem(res.status, body);
    }
    return { status: res.status, body };
  }

  function money(cents, currency) {
    try {
      return new Intl.NumberFormat(undefined, { style: "currency", currency: currency.toUpperCase() }).format(cents / 100);
    } catch (e) {
      return (cents / 100).toFixed(2) + " " + currency.toUpperCase();
    }
  }

  function clock(ms) {
    if (ms < 0) ms = 0;
    const s = Math.floor(ms / 1000);
    const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60, sec = s % 60;
    const pad = (n) => String(n).padStart(2, "0");
    return (d ? d + "d " : "") + (d || h ? pad(h) + ":" : "") + pad(m) + ":" + pad(sec);
  }

  // plural says a count with its noun: "1 buyer", "2 buyers".
  function plural(n, one, many) {
    return n + " " + (n === 1 ? one : many || one + "s");
  }

  // salePrice is a sale's price as a list shows it: a sale of sizes at
  // several prices says its lowest, the top-level price_cents, "from".
  function salePrice(s) {
    const prices = new Set((s.variants || []).map((v) => v.price_cents));
    return (prices.size > 1 ? "from " : "") + money(s.price_cents, s.currency);
  }

  function show(el, text, info) {
    el.textContent = text;
    el.classList.toggle("info", !!info);
    el.hidden = !text;
  }

  // --- signing in ---------------------------------------------------------

  let uiConfig = { demo_sign_in: false, checkout_url: "", payment_provider: "dev" };

  async function loadConfig() {
    try { uiConfig = (await api("GET", "/ui/config")).body; } catch (e) { /* defaults */ }
  }

  function signOut(reload) {
    localStorage.removeItem(TOKEN);
    localStorage.removeItem(USER);
    if (reload) location.reload();
  }

  function renderWho(onChange) {
    const who = $("who");
    who.replaceChildren();
    const box = $("signin");
    if (user()) {
      who.append("Signed in as ");
      const b = document.createElement("strong");
      b.id = "who-user";
      b.textContent = user();
      const out = document.createElement("button");
      out.className = "secondary";
      out.textContent = "Sign out";
      out.onclick = () => signOut(true);
      who.append(b, out);
      box.hidden = true;
      return;
    }
    box.hidden = false;
    box.replaceChildren();
    const h = document.createElement("h2");
    h.textContent = "Sign in to buy";
    box.append(h);
    const row = document.createElement("div");
    row.className = "row";
    const msg = document.createElement("div");
    msg.className = "message";
    msg.hidden = true;
    if (uiConfig.demo_sign_in) {
      const name = document.createElement("input");
      name.id = "signin-name";
      name.placeholder = "your name";
      name.value = "shopper-" + Math.floor(Math.random() * 100000);
      const go = document.createElement("button");
      go.id = "signin-button";
      go.textContent = "Sign in (demo)";
      go.onclick = async () => {
        try {
          const r = await api("POST", "/dev/sign-in", { body: { user_id: name.value.trim() } });
          localStorage.setItem(TOKEN, r.body.token);
          localStorage.setItem(USER, r.body.user_id);
          renderWho(onChange);
          onChange();
        } catch (e) { show(msg, e.message); }
      };
      row.append(name, go);
    } else {
      const t = document.createElement("input");
      t.id = "signin-token";
      t.placeholder = "paste a token (seckill token --user ID)";
      t.size = 40;
      const go = document.createElement("button");
      go.id = "signin-button";
      go.textContent = "Use token";
      go.onclick = () => {
        const raw = t.value.trim();
        try {
          const claims = JSON.parse(atob(raw.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
          localStorage.setItem(TOKEN, raw);
          localStorage.setItem(USER, claims.sub);
          renderWho(onChange);
          onChange();
        } catch (e) { show(msg, "That is not a token."); }
      };
      row.append(t, go);
    }
    box.append(row, msg);
  }

  // --- list of sales -----------------------------------------------------

  async function salesPage() {
    await loadConfig();
    renderWho(() => {});
    const list = $("sales");
    try {
      const r = await api("GET", "/api/v1/sales?limit=50");
      list.replaceChildren();
      if (!r.body.sales.length) {
        const li = document.createElement("li");
        li.className = "muted";
        li.textContent = "No sales yet. An operator creates one with: seckill sale create";
        list.append(li);
      }
      for (const s of r.body.sales) {
        const li = document.createElement("li");
        const a = document.createElement("a");
        a.href = "/sales/" + s.id;
        a.textContent = s.name;
        const price = document.createElement("span");
        price.className = "price";
        price.textContent = salePrice(s);
        const badge = document.createElement("span");
        badge.className = "badge " + s.state;
        badge.textContent = s.state.replace("_", " ").toLowerCase();
        const left = document.createElement("span");
        left.className = "muted";
        left.textContent = s.state === "SCHEDULED"
          ? "starts " + new Date(Date.parse(s.starts_at)).toLocaleString()
          : s.stock.remaining + " of " + s.stock.total + " left";
        li.append(a, price, badge, left);
        list.append(li);
      }
    } catch (e) {
      list.replaceChildren(Object.assign(document.createElement("li"), { className: "message", textContent: e.message }));
    }
  }

  // --- one sale ------------------------------------------------------------

  async function salePage() {
    const saleID = location.pathname.split("/").filter(Boolean).pop();
    await loadConfig();
    let sale = null;
    let order = null;
    let stream = null;
    // The caller's place on the waitlist: null (not on it), or the body of
    // GET /waitlist/me (WAITING with a position, ADMITTED, EXPIRED).
    let wait = null;
    let waitPoll = null;
    // The caller's entry in the sale's lobby: null (not entered), or the
    // body of GET /lobby/me (ENTERED, WON, WAITING, LOST).
    let entry = null;
    let lobbyPoll = null;
    // The published draw (GET /draw) once the sale's state says it has run:
    // null until read, "pending" while the API says it is not done.
    let drawn = null;
    // The sku of the line the caller joined from this page (GET
    // /waitlist/me does not say it): named in the waitlist card.
    let waitSKU = null;
    const msg = $("message");

    renderWho(() => { render(); resume(); prepareProof(); });

    async function refreshSale() {
      try {
        sale = (await api("GET", "/api/v1/sales/" + encodeURIComponent(saleID))).body;
      } catch (e) {
        if (e.code === "SALE_NOT_FOUND") {
          $("sale-name").textContent = "No such sale";
          show(msg, e.message);
          return false;
        }
        return true; // keep polling through a hiccup
      }
      document.title = "seckill: " + sale.name;
      if (sale.lobby_opens_at && drawPhase(Date.now()) === "drawn" && (drawn === null || drawn === "pending")) await loadDraw();
      render();
      return true;
    }

    // loadDraw reads the published draw: its seed and counts, for the
    // lobby card's proof.
    async function loadDraw() {
      try {
        drawn = (await api("GET", "/api/v1/sales/" + encodeURIComponent(saleID) + "/draw")).body;
      } catch (e) {
        if (e.code === "DRAW_IN_PROGRESS") drawn = "pending";
      }
    }

    // Where a sale with a lobby stands, from its state (the API's clock)
    // and, at the edges, this browser's clock, so that entering stops at
    // zero: "soon" (the lobby opens later), "open" (entries until the
    // start), "drawing", or "drawn" (ACTIVE, SOLD_OUT or ENDED: it has run).
    function drawPhase(now) {
      const st = sale.state;
      if (st === "SCHEDULED" && now < Date.parse(sale.lobby_opens_at)) return "soon";
      if ((st === "SCHEDULED" || st === "LOBBY") && now < Date.parse(sale.starts_at)) return "open";
      if (st === "SCHEDULED" || st === "LOBBY" || st === "DRAWING") return "drawing";
      return "drawn";
    }

    // --- what to buy: a size and a quantity (docs/API.md "Claims") -------
    // A sale of several variants lists them, each with its price and live
    // stock, and the buyer chooses one (none is chosen for them: a wrong
    // size is worse than a click). A sale of one variant (sku "default"
    // for a sale made without variants) shows no size list, as before;
    // the quantity is offered when the sale's limit per buyer is over 1.
    let chosenSKU = null;
    let pickersFor = ""; // the variants and limit the pickers were built for

    function variants() { return (sale && sale.variants) || []; }
    function several() { return variants().length > 1; }
    function variantOf(sku) { return variants().find((v) => v.sku === sku) || null; }
    function chosen() { return several() ? variantOf(chosenSKU) : variants()[0] || null; }
    function limit() { return Math.max(1, (sale && sale.limit_per_buyer) || 1); }
    function quantity() { return Math.min(limit(), Math.max(1, Number($("quantity").value) || 1)); }
    // item is the body of a claim: the chosen variant and quantity
    // (undefined from an API that shows no variants: no body, as in v3).
    function item() {
      const v = chosen();
      return v ? { sku: v.sku, quantity: quantity() } : undefined;
    }
    // sizeName names a variant for the buyer.
    function sizeName(sku) {
      const v = variantOf(sku);
      return v ? v.name : sku;
    }

    // buildPickers makes the size list and the quantity choices once per
    // set of variants; render then only updates them, so the refresh every
    // 250 ms neither moves the keyboard focus nor loses a click.
    function buildPickers() {
      const key = variants().map((v) => v.sku).join(" ") + "|" + limit();
      if (key === pickersFor) return;
      pickersFor = key;
      const rows = [];
      if (several()) {
        for (const v of variants()) {
          const row = Object.assign(document.createElement("div"), { className: "size" });
          row.dataset.sku = v.sku;
          const radio = Object.assign(document.createElement("input"), { type: "radio", name: "size", id: "size-" + v.sku, value: v.sku });
          radio.checked = v.sku === chosenSKU;
          radio.onchange = () => { chosenSKU = v.sku; render(); };
          const label = document.createElement("label");
          label.htmlFor = radio.id;
          label.append(
            Object.assign(document.createElement("span"), { className: "size-name", textContent: v.name }), " ",
            Object.assign(document.createElement("span"), { className: "size-price" }), " ",
            Object.assign(document.createElement("span"), { className: "size-left" }));
          const join = Object.assign(document.createElement("button"), { type: "button", className: "secondary size-join", textContent: "Join the waiting line", hidden: true });
          join.setAttribute("aria-label", "Join the waiting line for " + v.name);
          join.onclick = () => joinWaitlist(v.sku, join);
          row.append(radio, label, join);
          rows.push(row);
        }
      }
      $("size-list").replaceChildren(...rows);
      const q = $("quantity");
      const was = Number(q.value) || 1;
      q.replaceChildren();
      for (let n = 1; n <= limit(); n++) q.append(new Option(String(n), String(n)));
      q.value = String(Math.min(was, limit()));
      $("quantity-limit").textContent = "at most " + limit() + " per buyer";
    }

    // renderPickers shows each size's price and what is left of it, greys
    // a sold-out size and offers its waiting line when a join can work,
    // and says what the chosen size and quantity cost (not while the buyer
    // holds an order of the sale: there is nothing to buy then).
    function renderPickers(joinable, active) {
      buildPickers();
      $("sizes").hidden = !several();
      $("quantity-row").hidden = limit() <= 1;
      for (const row of $("size-list").children) {
        const v = variantOf(row.dataset.sku);
        if (!v) continue;
        const out = v.stock.remaining <= 0;
        row.classList.toggle("sold-out", out);
        row.querySelector("input").disabled = out;
        setText(row.querySelector(".size-price"), money(v.price_cents, sale.currency));
        setText(row.querySelector(".size-left"), out ? "sold out" : v.stock.remaining + " left");
        row.querySelector(".size-join").hidden = !(out && joinable);
      }
      const v = chosen();
      const amount = $("amount");
      amount.hidden = !(v && !active && (several() || limit() > 1));
      if (!amount.hidden) {
        const q = quantity();
        setText(amount, "Total " + money(q * v.price_cents, sale.currency) +
          " (" + (several() ? v.name + ", " : "") + q + " × " + money(v.price_cents, sale.currency) + ")");
      }
    }

    // setText changes an element's text only when it differs, so a live
    // region is not read out again every 250 ms.
    function setText(el, text) {
      if (el.textContent !== text) el.textContent = text;
    }

    function render() {
      if (!sale) return;
      $("sale-name").textContent = sale.name;
      $("sale-price").textContent = salePrice(sale);
      $("sale-state").textContent = sale.state.replace("_", " ").toLowerCase();
      $("sale-state").className = "badge " + sale.state;
      $("stock-remaining").textContent = sale.stock.remaining;
      $("stock-total").textContent = sale.stock.total;
      $("stock-bar").style.width = (100 * sale.stock.remaining / sale.stock.total) + "%";
      const now = Date.now(), starts = Date.parse(sale.starts_at), ends = Date.parse(sale.ends_at);
      // A presale (docs/API.md "Presale"): its members buy from its start,
      // everyone else from starts_at. The countdown is to when the buyer
      // can buy; a member buying in the presale sees how long their head
      // start lasts.
      const member = !!sale.presale && holds(sale.presale.claim);
      const presaleAt = sale.presale ? Date.parse(sale.presale.starts_at) : starts;
      const presaleOn = !!sale.presale && now >= presaleAt && now < starts;
      const opens = member ? presaleAt : starts;
      if (member && now < presaleAt) {
        $("countdown-label").textContent = "Members' presale starts in";
        $("countdown").textContent = clock(presaleAt - now);
      } else if (member && now < starts) {
        $("countdown-label").textContent = "Members' presale: open to everyone in";
        $("countdown").textContent = clock(starts - now);
      } else if (now < starts) {
        $("countdown-label").textContent = "Starts in";
        $("countdown").textContent = clock(starts - now);
      } else if (now < ends) {
        $("countdown-label").textContent = "Ends in";
        $("countdown").textContent = clock(ends - now);
      } else {
        $("countdown-label").textContent = "Ended";
        $("countdown").textContent = "";
      }
      const active = order && (order.status === "QUEUED" || order.status === "AWAITING_PAYMENT" || order.status === "PAID");
      const phase = sale.lobby_opens_at ? drawPhase(now) : "";
      const at = (t) => new Date(t).toLocaleString();
      $("claim").textContent = member && now < starts ? "Members' presale" : "Buy now";
      // Why "Buy now" cannot be pressed, said next to it; "" when it can.
      let why = "";
      if (!user()) why = "Sign in to buy.";
      else if (order && order.status === "PAID") why = "You bought this one: it is yours.";
      else if (active) why = "You have an order for this sale: see below.";
      else if (phase === "soon") why = "This sale starts with a draw at " + at(starts) + "; its lobby opens " + at(Date.parse(sale.lobby_opens_at)) + ".";
      else if (phase === "open" && entry) why = "This sale starts with a draw at " + at(starts) + ", and you are in it.";
      else if (phase === "open") why = "This sale starts with a draw: enter it below before " + at(starts) + ".";
      else if (now < opens && member) why = "You are a member: you can buy in the members' presale from " + at(opens) + ", before the sale opens to everyone " + at(starts) + ".";
      else if (now < opens && presaleOn) why = "Members' presale: only its members can buy now, and your account is not one. You can buy when the sale opens to everyone, " + at(starts) + ".";
      else if (now < opens && sale.presale) why = "The sale opens to everyone " + at(starts) + "; its members' presale starts " + at(presaleAt) + ".";
      else if (now < opens) why = "The sale starts " + at(starts) + ".";
      else if (now >= ends || sale.state === "ENDED") why = "The sale has ended.";
      else if (phase === "drawing") why = "The draw is running; any units it leaves can be bought here once it is done.";
      else if (sale.stock.remaining <= 0) why = "Sold out. Units come back when a buyer does not pay in time or cancels.";
      else if (several() && !chosen()) why = "Choose a size.";
      else if (chosen() && chosen().stock.remaining <= 0) why = chosen().name + " is sold out: choose another size, or join its waiting line.";
      $("claim").disabled = why !== "";
      $("claim-why").textContent = why;
      renderOrder();
      const joinable = renderWaitlist(active, now >= opens && now < ends && (phase === "" || phase === "drawn"));
      renderPickers(joinable, active);
      renderLobby(now, phase);
    }

    // The lobby card of a sale that starts with a draw (docs/API.md "Fair
    // start"): enter until the start, then the caller's result, and the
    // draw's proof.
    function renderLobby(now, phase) {
      const box = $("lobby");
      if (!sale.lobby_opens_at) { box.hidden = true; return; }
      box.hidden = false;
      $("lobby-status").textContent = lobbyStatus(now, phase);
      $("enter").hidden = !(user() && !entry && phase === "open");
      renderProof(phase);
    }

    // lobbyStatus says where the caller stands in the draw.
    function lobbyStatus(now, phase) {
      const starts = Date.parse(sale.starts_at);
      const at = (t) => new Date(t).toLocaleString();
      const closed = phase === "drawn" ? "The lobby closed at the start, and the draw is done." : "The lobby closed at the start, and the draw is running.";
      if (!user()) {
        if (phase === "soon") return "The lobby opens " + at(Date.parse(sale.lobby_opens_at)) + ": sign in to enter the draw then.";
        if (phase === "open") return "Sign in to enter the draw.";
        return closed + (phase === "drawn" ? " If you entered, sign in to see your result." : "");
      }
      if (!entry) {
        if (phase === "soon") return "The lobby opens " + at(Date.parse(sale.lobby_opens_at)) + ".";
        if (phase === "open") return "Enter before the start, in " + clock(starts - now) + ": units go by a draw among everyone who entered, not to the fastest click.";
        return closed;
      }
      const rank = " (rank " + entry.rank + ")";
      switch (entry.status) {
        case "WON": {
          let text = "You won in the draw" + rank;
          const mine = order && order.order_id === entry.order_id ? order.status : "";
          if (mine === "PAID") return text + ": it is yours.";
          if (mine === "CLOSED") return text + ", but its order is closed: see below.";
          return text + ": pay before the time runs out.";
        }
        case "WAITING": {
          const text = "The draw put you on the waitlist" + rank;
          if (sale.state === "ENDED") return text + "; the sale ended before a unit came to you.";
          if (!entry.position) return text + "; you left it.";
          return text + (entry.position === 1 ? ": you are next in line." : ": you are number " + entry.position + " in line.");
        }
        case "LOST":
          return "Not this time: your rank in the draw was " + entry.rank + ", after every unit and every place on the waitlist.";
      }
      if (phase === "open") return "You are in the draw. It runs at " + at(starts) + " (in " + clock(starts - now) + "); everyone who entered has the same chance.";
      if (phase === "drawn") return "You are in the draw, and it is done: your result comes in a moment…";
      return "You are in the draw. It is running now…";
    }

    // renderProof says how the draw can be checked: the commitment before
    // it, the published seed and the ways to verify after. Rebuilt only
    // when it changes, so a reader can select the seed.
    let proofShown = "";
    function renderProof(phase) {
      const commitment = sale.draw ? sale.draw.commitment : "";
      const done = drawn && drawn !== "pending" ? drawn : null;
      const beacon = sale.draw && sale.draw.beacon; // the drand round the ranks also depend on
      const proof = entry && entry.inclusion_proof; // this buyer's entry in the committed entries
      const key = [phase, commitment, done ? done.seed : drawn, proof ? proof.leaf_index : ""].join("|");
      if (key === proofShown) return;
      proofShown = key;
      const code = (id, text) => Object.assign(document.createElement("code"), { id, textContent: text });
      const link = () => Object.assign(document.createElement("a"), {
        id: "verify-link", href: "/api/v1/sales/" + encodeURIComponent(sale.id) + "/draw", textContent: "the published draw" });
      const verify = code("", "seckill draw verify --sale " + sale.id + " --api " + location.origin);
      const p = $("lobby-proof");
      // The beacon and the buyer's own inclusion, said after the rest.
      const more = () => {
        const parts = [];
        if (beacon) parts.push(" The ranks also depend on drand round " + beacon.round + ", published after the lobby closes, so nobody, the shop included, can know them before the entries are fixed.");
        if (proof) parts.push(" Your entry is entry " + (proof.leaf_index + 1) + " of the " + proof.tree_size + " committed when the lobby closed (its inclusion proof is in GET /lobby/me).");
        return parts;
      };
      if (phase === "soon") {
        p.replaceChildren("When the lobby opens, the shop shows the SHA-256 of the draw's secret seed, its commitment. " +
          "After the draw it publishes the seed and every entry, so anyone can recompute every rank.");
      } else if (phase !== "drawn" || drawn === "pending") {
        p.replaceChildren("The shop has committed to the draw's secret seed by showing its SHA-256: ", code("lobby-commitment", commitment),
          ". When the draw is done it publishes the seed and every entry, so anyone can check the seed against this and recompute every rank.", ...more());
      } else if (done) {
        p.replaceChildren("The draw is done, and its seed is published: ", code("draw-seed", done.seed),
          ". Its SHA-256 is the commitment shown before the draw, ", code("lobby-commitment", done.commitment),
          ". Anyone can recompute every rank from ", link(), " (" + plural(done.entries, "entry", "entries") + ", " + done.admitted +
          " admitted), or check the whole draw with ", verify, ".", ...more());
      } else {
        p.replaceChildren("The draw is done, and its seed is published with every entry: ", link(),
          ". Anyone can recompute every rank from it, or check the whole draw with ", verify, ".");
      }
    }

    // watchLobby reads the caller's entry: often around the draw, seldom
    // before it; a win shows its order.
    async function watchLobby() {
      clearTimeout(lobbyPoll);
      if (!user() || !sale || !sale.lobby_opens_at) return;
      const before = entry && entry.status;
      try {
        entry = (await api("GET", "/api/v1/sales/" + saleID + "/lobby/me")).body;
      } catch (e) {
        if (e.code === "NOT_IN_LOBBY") entry = null;
      }
      if (entry && entry.status !== "ENTERED" && before === "ENTERED") {
        show(msg, ""); // the draw has run: its result replaces "You are in the draw."
        refreshSale();
        if (entry.status === "WAITING") watchWaitlist(); // the waitlist card shows the place, and Leave
      }
      if (entry && entry.status === "WON" && entry.order_id && (!order || order.order_id !== entry.order_id)) {
        await showOrder(entry.order_id);
      }
      render();
      // Until the result, and while the draw's waitlist place lasts.
      const waiting = entry && entry.status === "WAITING" && entry.position && Date.now() < Date.parse(sale.ends_at);
      if (entry && (entry.status === "ENTERED" || waiting)) {
        const soon = Date.parse(sale.starts_at) - Date.now() < 5000;
        lobbyPoll = setTimeout(watchLobby, soon || waiting ? 1000 : 5000);
      }
    }

    // The waitlist card: offered on a sold-out sale to a signed-in buyer
    // with no active order, unless the line is full (a join would be
    // refused WAITLIST_FULL: the card says so instead); while they wait it
    // shows their live position. A sale of several sizes has a line per
    // size, joined from the sold-out size in the size list (a buyer waits
    // in one line of a sale); the card explains them and shows the place.
    // Returns whether a join is offered now.
    function renderWaitlist(active, open) {
      const waiting = wait && wait.status === "WAITING";
      const expired = wait && wait.status === "EXPIRED";
      const line = sale.waitlist; // a sold-out sale's {waiting, max}
      const full = !!line && line.waiting >= line.max;
      const soldOut = several() ? variants().some((v) => v.stock.remaining <= 0) : sale.stock.remaining <= 0;
      const offer = !!(user() && open && !active && !waiting && soldOut);
      $("waitlist").hidden = !(offer || waiting || expired);
      $("join").hidden = !offer || full || several();
      $("leave").hidden = !waiting;
      let text = "";
      const size = several() && waitSKU ? " for " + sizeName(waitSKU) : "";
      if (waiting) text = wait.position === 1 ? "You are next in line" + size + "." : "You are number " + wait.position + " in line" + size + ".";
      else if (expired) text = "The sale ended before a unit came back to you.";
      else if (full) text = "The waitlist is full: it holds " + plural(line.max, "buyer") + ", its most. " +
        "A place opens when someone in line leaves it or is given a unit; you can join then.";
      else if (several()) {
        text = "A sold-out size gets units back when a buyer does not pay in time or cancels, and they go to that size's " +
          "waiting line first, first come, first served. Join the line of a sold-out size above; you can wait in one line at a time.";
        if (line) text += " " + plural(line.waiting, "buyer") + (line.waiting === 1 ? " is" : " are") + " waiting for this sale.";
      } else {
        text = "Units come back when a buyer does not pay in time or cancels, and go to the waitlist first come, first served.";
        if (line && line.waiting === 0) text += " Nobody is in line: join, and the next one is yours.";
        else if (line) text += " " + plural(line.waiting, "buyer") + (line.waiting === 1 ? " is" : " are") + " in line; you would be number " + (line.waiting + 1) + ".";
      }
      $("wait-status").textContent = text;
      return offer && !full;
    }

    // watchWaitlist reads the caller's place while they wait (every 1 s near
    // the head of the line, 3 s further back), and
    // follows the order a unit becomes as soon as one comes to them.
    async function watchWaitlist() {
      clearTimeout(waitPoll);
      try {
        wait = (await api("GET", "/api/v1/sales/" + saleID + "/waitlist/me")).body;
      } catch (e) {
        if (e.code === "NOT_WAITING") wait = waitSKU = null;
      }
      if (wait && wait.status === "ADMITTED") {
        const id = wait.order_id;
        wait = waitSKU = null;
        show(msg, "A unit came back, and it is yours: pay before the time runs out.", true);
        await showOrder(id);
      }
      render();
      // The few next in line look often; the rest of a long line, less.
      if (wait && wait.status === "WAITING") waitPoll = setTimeout(watchWaitlist, wait.position <= 10 ? 1000 : 3000);
    }

    function renderOrder() {
      const box = $("order");
      if (!order) { box.hidden = true; return; }
      box.hidden = false;
      $("order-id").textContent = order.order_id;
      const st = $("order-status");
      st.dataset.status = order.status;
      st.textContent = statusWords[order.status] || order.status;
      const what = orderItem(order);
      $("order-item").hidden = !what;
      setText($("order-item"), what);
      let detail = "";
      if (order.status === "CLOSED") detail = closeWords[order.close_reason] || "";
      if (order.status === "PAID") detail = "Paid " + money(order.amount_cents, order.currency) + ".";
      if (order.refund) detail += " A refund of " + money(order.refund.amount_cents, order.currency) +
        (order.refund.status === "SUCCEEDED" ? " was made." : " is on its way.");
      $("order-detail").textContent = detail.trim();
      // Payable from the claim's answer on: QUEUED only means the order's
      // workflow has not written it down yet.
      const waiting = order.status === "QUEUED" || order.status === "AWAITING_PAYMENT";
      $("payby").hidden = !(waiting && order.pay_by);
      if (waiting && order.pay_by) $("payby-countdown").textContent = clock(Date.parse(order.pay_by) - Date.now());
      const stripe = uiConfig.payment_provider === "stripe";
      $("pay").hidden = !(waiting && (uiConfig.checkout_url || stripe));
      // Unknown while the order could not be read (showOrder's stand-in).
      $("pay").textContent = order.currency ? "Pay " + money(order.amount_cents, order.currency) : "Pay";
      $("cancel").hidden = !waiting;
    }

    // orderItem says what an order holds: its size and quantity and what
    // they cost; "" for one unit of a sale of one variant, whose order
    // reads as before.
    function orderItem(o) {
      const q = o.quantity || 1;
      if (!o.sku || (!several() && q === 1)) return "";
      const parts = [];
      if (several()) parts.push("Size " + sizeName(o.sku));
      parts.push(plural(q, "unit"));
      return parts.join(", ") + (o.currency ? ": " + money(o.amount_cents, o.currency) : "");
    }

    // follow streams the order's status events until a terminal one,
    // reconnecting after a dropped connection.
    async function follow(orderID) {
      if (stream) stream.abort();
      const ctrl = new AbortController();
      stream = ctrl;
      for (let attempt = 0; !ctrl.signal.aborted; attempt++) {
        try {
          const res = await fetch("/api/v1/orders/" + orderID + "/events", {
            headers: { Authorization: "Bearer " + token(), Accept: "text/event-stream" },
            signal: ctrl.signal,
          });
          if (res.status === 404) { order = null; render(); return; }
          if (!res.ok) throw new Error("HTTP " + res.status);
          attempt = 0;
          const reader = res.body.getReader();
          const dec = new TextDecoder();
          let buf = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += dec.decode(value, { stream: true });
            let i;
            while ((i = buf.indexOf("\n\n")) >= 0) {
              const block = buf.slice(0, i);
              buf = buf.slice(i + 2);
              let event = "message", data = "";
              for (const line of block.split("\n")) {
                if (line.startsWith("event:")) event = line.slice(6).trim();
                else if (line.startsWith("data:")) data += line.slice(5).trim();
              }
              if (event === "status" && data) {
                order = JSON.parse(data);
                render();
              }
            }
          }
          if (order && (order.status === "PAID" || order.status === "CLOSED")) return;
        } catch (e) {
          if (ctrl.signal.aborted) return;
        }
        await new Promise((r) => setTimeout(r, Math.min(5000, 500 * (attempt + 1))));
      }
    }

    // showOrder reads one of the caller's orders and follows it until it
    // is PAID or CLOSED.
    async function showOrder(id) {
      try {
        order = (await api("GET", "/api/v1/orders/" + id)).body;
      } catch (e) {
        order = { order_id: id, status: "QUEUED" };
      }
      render();
      if (order.status !== "PAID" && order.status !== "CLOSED") follow(id);
    }

    // resume shows what the caller already has on this sale after a
    // reload or a sign-in: their newest order (GET /orders?sale_id=), and
    // their place on the waitlist.
    async function resume() {
      if (!user()) return;
      try {
        const orders = (await api("GET", "/api/v1/orders?sale_id=" + encodeURIComponent(saleID))).body;
        if (orders.length) {
          order = orders[0];
          render();
          if (order.status !== "PAID" && order.status !== "CLOSED") follow(order.order_id);
        }
      } catch (e) { /* the claim button still works */ }
      watchWaitlist();
      watchLobby();
    }

    // A sale with proof_of_work: each claim and waitlist join carries a
    // solved challenge (pow.js), solved in the background while the buyer
    // waits for the start, so a click seldom waits for it.
    function needsProof() { return !!(sale && sale.proof_of_work && window.seckillProof); }
    function prepareProof() {
      if (needsProof() && user() && Date.now() < Date.parse(sale.ends_at)) window.seckillProof.prepare(saleID);
    }
    async function proof() {
      if (!needsProof()) return null;
      if (!window.seckillProof.ready(saleID)) show(msg, "Solving the shop's anti-bot puzzle…", true);
      const v = await window.seckillProof(saleID);
      show(msg, "");
      return v;
    }

    // claimRefused says a claim's refusal in the buyer's words, naming
    // the size of a sale of several and how many are left of it.
    function claimRefused(e, asked) {
      const name = asked && several() ? sizeName(asked.sku) : "";
      if (e.code === "NOT_ENOUGH_STOCK" && typeof e.body.remaining === "number") {
        const left = e.body.remaining;
        return "Only " + left + " left" + (name ? " of " + name : "") + ": choose " +
          (left === 1 ? "1" : "at most " + left) + (name ? ", or another size." : ".");
      }
      if (e.code === "SOLD_OUT" && name) {
        return name + " is sold out. Units come back when someone does not pay: try again in a moment, or join its waiting line.";
      }
      return e.message;
    }

    let claimKey = null;
    let claimProof = null; // sent again with claimKey when the attempt is retried
    let claimBody = ""; // the body claimKey was sent with
    $("claim").onclick = async () => {
      show(msg, "");
      $("claim").disabled = true;
      const body = item();
      // One key per purchase attempt: a retry after a network error gets
      // the first answer again instead of a second decision. Another size
      // or quantity is another attempt (the API refuses a key reused for
      // another body), with a proof of its own (the first may be spent).
      const sent = JSON.stringify(body || null);
      if (sent !== claimBody) claimKey = claimProof = null;
      claimBody = sent;
      claimKey = claimKey || crypto.randomUUID();
      try {
        claimProof = claimProof || await proof();
        const headers = { "Idempotency-Key": claimKey };
        if (claimProof) headers["X-Seckill-Proof"] = claimProof;
        const r = await api("POST", "/api/v1/sales/" + saleID + "/claims", { headers, body });
        claimKey = claimProof = null;
        // Payable at once: the answer carries the amount and the deadline.
        order = { order_id: r.body.order_id, status: r.body.status, sku: r.body.sku, quantity: r.body.quantity,
          amount_cents: r.body.amount_cents, currency: r.body.currency, pay_by: r.body.pay_by };
        render();
        follow(r.body.order_id);
        refreshSale();
      } catch (e) {
        if (e.status !== 0) claimKey = claimProof = null;
        prepareProof(); // for the next try, or the waitlist
        show(msg, claimRefused(e, body));
        if (e.code === "ALREADY_CLAIMED" && e.body.order_id) showOrder(e.body.order_id);
        render();
        refreshSale();
      }
    };

    // joinWaitlist puts the caller in the waiting line of the variant sku
    // (the only one of a sale of one variant), button pressed meanwhile.
    async function joinWaitlist(sku, button) {
      show(msg, "");
      button.disabled = true;
      try {
        const p = await proof();
        const opts = { body: sku ? { sku } : undefined };
        if (p) opts.headers = { "X-Seckill-Proof": p };
        const r = await api("POST", "/api/v1/sales/" + saleID + "/waitlist", opts);
        if (r.body.status === "ADMITTED") {
          show(msg, "A unit was still there, and it is yours: pay before the time runs out.", true);
          await showOrder(r.body.order_id);
        } else {
          wait = r.body;
          waitSKU = r.body.sku || sku || null;
        }
      } catch (e) {
        if (e.code === "ALREADY_WAITING") {
          wait = { status: "WAITING", position: e.body.position };
          waitSKU = null; // in a line, perhaps another size's: the answer does not say
        } else if (e.code === "ALREADY_CLAIMED" && e.body.order_id) showOrder(e.body.order_id);
        else show(msg, e.message);
        if (e.code === "WAITLIST_FULL") await refreshSale(); // the line as it is now: no join offered while full
      }
      button.disabled = false;
      render();
      // The pressed button is gone once they wait: the keyboard's focus
      // goes to the way out of the line, next to their place in it.
      if (!$("leave").hidden && button.hidden) $("leave").focus();
      if (wait && wait.status === "WAITING") watchWaitlist();
      if (sale.lobby_opens_at) watchLobby(); // a place in line again, after the draw's
    }

    $("join").onclick = () => joinWaitlist(chosen() ? chosen().sku : undefined, $("join"));
    $("quantity").onchange = render;

    $("enter").onclick = async () => {
      show(msg, "");
      $("enter").disabled = true;
      try {
        const p = await proof();
        // The entry is for the size and quantity chosen, as a claim is.
        const opts = { body: item() };
        if (p) opts.headers = { "X-Seckill-Proof": p };
        entry = (await api("POST", "/api/v1/sales/" + saleID + "/lobby", opts)).body;
        const v = variantOf(entry.sku);
        show(msg, "You are in the draw" + (entry.quantity ? " for " + entry.quantity + (several() && v ? " × " + v.name : "") : "") + ".", true);
        prepareProof();
      } catch (e) {
        show(msg, e.message);
        prepareProof();
      }
      $("enter").disabled = false;
      render();
      watchLobby();
    };

    $("leave").onclick = async () => {
      show(msg, "");
      try {
        await api("DELETE", "/api/v1/sales/" + saleID + "/waitlist/me");
        clearTimeout(waitPoll);
        wait = waitSKU = null;
        show(msg, "You left the waitlist.", true);
        refreshSale(); // the line without them
        if (sale.lobby_opens_at) watchLobby(); // the draw's place given up
      } catch (e) { show(msg, e.message); }
      render();
    };

    $("cancel").onclick = async () => {
      show(msg, "");
      try {
        await api("POST", "/api/v1/orders/" + order.order_id + "/cancel");
        show(msg, "Cancelling…", true);
      } catch (e) { show(msg, e.message); }
    };

    $("pay").onclick = async () => {
      if (uiConfig.payment_provider === "stripe") {
        // The order's PaymentIntent (made once, whoever asks first). A shop
        // mounts Stripe's Payment Element here with its client secret
        // (docs/OPERATIONS.md "Taking payments with Stripe"); this page cannot load
        // Stripe.js, so it says where it would go.
        try {
          order = (await api("POST", "/api/v1/orders/" + order.order_id + "/payment")).body;
          show($("stripe-mount"), "Stripe's Payment Element mounts here, for PaymentIntent " +
            order.payment.payment_intent_id + " (its client secret is in this page's order).", true);
          $("stripe-mount").dataset.paymentIntent = order.payment.payment_intent_id;
        } catch (e) { show(msg, e.message); }
        return;
      }
      const u = new URL(uiConfig.checkout_url, location.href);
      u.searchParams.set("order_id", order.order_id);
      u.searchParams.set("return", location.pathname);
      location.href = u.toString();
    };

    if (await refreshSale()) {
      resume();
      prepareProof();
      setInterval(refreshSale, 2000);
      setInterval(render, 250);
    }
  }

  // --- the dev payment provider's checkout ----------------------------------

  async function checkoutPage() {
    const params = new URLSearchParams(location.search);
    const orderID = params.get("order_id") || "";
    const back = params.get("return") || "/";
    const msg = $("message");
    $("checkout-order").textContent = orderID;
    // Only a page of this site: never send the shopper elsewhere ("//x",
    // "/\x" and "https://x" all resolve to another origin).
    let backTo = "/";
    try {
      const u = new URL(back, location.origin);
      if (u.origin === location.origin) backTo = u.pathname + u.search;
    } catch (e) { /* keep "/" */ }
    let order;
    try {
      order = (await api("GET", "/api/v1/orders/" + encodeURIComponent(orderID))).body;
    } catch (e) { show(msg, e.message); return; }
    $("checkout-amount").textContent = money(order.amount_cents, order.currency);
    if (order.status !== "QUEUED" && order.status !== "AWAITING_PAYMENT") {
      show(msg, "This order is " + order.status.toLowerCase().replace("_", " ") + "; there is nothing to pay.", true);
    }
    const send = async (outcome) => {
      $("checkout-pay").disabled = $("checkout-decline").disabled = true;
      try {
        await api("POST", "/dev/checkout/" + encodeURIComponent(orderID), { body: { outcome } });
        location.href = backTo;
      } catch (e) {
        show(msg, e.message);
        $("checkout-pay").disabled = $("checkout-decline").disabled = false;
      }
    };
    $("checkout-pay").textContent = "Pay " + money(order.amount_cents, order.currency);
    $("checkout-pay").onclick = () => send("succeeded");
    $("checkout-decline").onclick = () => send("failed");
    $("checkout-pay").disabled = $("checkout-decline").disabled = false;
  }

  return { salesPage, salePage, checkoutPage };
})();

// Each page names itself in <body data-page>; no inline script, so the
// Content-Security-Policy can forbid them.
({ sales: Seckill.salesPage, sale: Seckill.salePage, checkout: Seckill.checkoutPage })[document.body.dataset.page]();
