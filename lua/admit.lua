-- admit.lua: the functions every script that gives units to a buyer
-- shares. lua.go puts this file in front of claim.lua, join.lua,
-- release.lua, handover.lua, give.lua, restock.lua and rewarm.lua, so an admission is
-- written in one place whether it comes from a claim, from a join that
-- found units in stock, or from units handed to the waitlist, and every
-- admitted order looks the same to the relay, the API and reconciliation.
--
-- The functions take a sale's keys for one variant as a table k (the
-- calling script fills it from its KEYS): k.stock (the variant's units in
-- this segment), k.claims, k.meta, k.outbox, k.admitted, k.wait (sorted set
-- user -> join sequence: the variant's waitlist, head first), k.waited (hash
-- user -> order id the waitlist gave them), k.lines (hash user ->
-- "<quantity>:<wait key>": the one line they are in, of whichever variant,
-- and the units they wait for), k.held (the units held for the head of the
-- variant's line, give_units) and k.units (hash sku -> units
-- the segment's claims hold, the one count of units in claims: docs/DESIGN.md
-- invariant 7), and the terms of an admission as a table t: t.sale (sale
-- id), t.timeout_ms (payment timeout), t.price (cents per unit), t.currency,
-- t.sku (the variant) and t.q (units, 1 when nil).

-- item_of is the "/<q>/<sku>" an admission record carries, '' for one unit
-- of the variant "default" (so a record of a sale of one variant reads as
-- it did before variants).
local function item_of(sku, q)
  if (sku == nil or sku == '' or sku == 'default') and q == 1 then
    return ''
  end
  return '/' .. q .. '/' .. sku
end

-- leave_line takes user out of the line whose wait key is line (of this
-- segment, whichever variant) and, when that empties it, gives the units
-- held for its head back to its variant's stock: nobody waits for them
-- now (as leave.lua does). The held and stock keys are the line's own
-- names with "held" and "stock" for "wait": the same slot. Returns
-- whether user was in the line.
local function leave_line(line, user)
  if redis.call('ZREM', line, user) == 0 then
    return false
  end
  if redis.call('ZCARD', line) == 0 then
    local tag, sku = string.match(line, '^(.*}:)wait(.*)$')
    local held = tonumber(redis.call('GET', tag .. 'held' .. sku) or '0')
    if held > 0 and redis.call('EXISTS', tag .. 'stock' .. sku) == 1 then
      redis.call('INCRBY', tag .. 'stock' .. sku, held)
      redis.call('DEL', tag .. 'held' .. sku)
    end
  end
  return true
end

-- admit records user's admission as order (an id string) at now: the
-- claim (one active order per user), its units in k.units, the admission
-- ("<pay_by>[d][/<q>/<sku>]:<user>": d when t.drawn, so the order can be
-- shown, paid and cancelled as the draw's before its saga writes it; the
-- item unless one unit of "default"; the markers sit before the ':'
-- because a user id may hold ':') and the outbox entry the relay starts
-- the saga from (o order, u user, s sale, t admission ms, p pay_by ms, a
-- amount = q x price, c currency, k sku and n quantity unless one unit of
-- "default", tp the claim's traceparent when t.trace is one, and d "1"
-- when t.drawn: the sale's draw admitted this buyer, so the order row says
-- so and the audit can hold the draw's record to it). A buyer admitted
-- while waiting leaves the waitlist as ADMITTED with this order. It does
-- not touch the stock: the caller has taken the units. pay_by is fixed
-- here: now plus the payment timeout.
-- Returns pay_by (ms, a string).
local function admit(k, user, order, now, t, from_waitlist)
  local q = tonumber(t.q or 1)
  local sku = t.sku or 'default'
  if sku == '' then
    sku = 'default'
  end
  local pay_by = tostring(now + tonumber(t.timeout_ms))
  local marker = ''
  if t.drawn then
    marker = 'd'
  end
  redis.call('HSET', k.claims, user, order)
  redis.call('HINCRBY', k.units, sku, q)
  redis.call('HSET', k.admitted, order, pay_by .. marker .. item_of(sku, q) .. ':' .. user)
  local expire = redis.call('HGET', k.meta, 'expire_ms')
  if expire then
    redis.call('PEXPIREAT', k.claims, expire)
    redis.call('PEXPIREAT', k.units, expire)
    redis.call('PEXPIREAT', k.admitted, expire)
  end
  if from_waitlist then
    redis.call('HINCRBY', k.meta, 'waitlist_admissions', 1)
  end
  local entry = {'o', order, 'u', user, 's', t.sale, 't', tostring(now),
    'p', pay_by, 'a', string.format('%.0f', q * tonumber(t.price)), 'c', t.currency}
  if item_of(sku, q) ~= '' then
    entry[#entry + 1], entry[#entry + 2] = 'k', sku
    entry[#entry + 1], entry[#entry + 2] = 'n', tostring(q)
  end
  if t.trace and t.trace ~= '' then
    entry[#entry + 1], entry[#entry + 2] = 'tp', t.trace
  end
  if t.drawn then
    entry[#entry + 1], entry[#entry + 2] = 'd', '1'
  end
  redis.call('XADD', k.outbox, '*', unpack(entry))
  -- A buyer admitted while waiting leaves their line, whichever variant's
  -- (lines names it; one who joined before lines existed is in k.wait).
  local entry = redis.call('HGET', k.lines, user)
  local left = leave_line(k.wait, user)
  if entry then
    left = leave_line(string.match(entry, '^%d+:(.*)$'), user) or left
    redis.call('HDEL', k.lines, user)
  end
  if left or from_waitlist then
    redis.call('HSET', k.waited, user, order)
    if expire then
      redis.call('PEXPIREAT', k.waited, expire)
    end
  end
  return pay_by
end

-- line_of reads a waiting user's entry in k.lines, "<quantity>:<wait
-- key>": the line they are in and the units they wait for (nil when the
-- user waits in no line this table knows; one who joined before lines
-- existed waits for one unit in k.wait).
local function line_of(k, user)
  local v = redis.call('HGET', k.lines, user)
  if not v then
    return nil, 1
  end
  local q, line = string.match(v, '^(%d+):(.*)$')
  return line, tonumber(q)
end

-- give_units gives n units of the variant the caller has taken (from a
-- release, a move, the stock) to the buyers waiting in the variant's line,
-- first come first served: the units join those already held for the
-- line's head (k.held: units on their way to a buyer who waits for more
-- than have come, counted there and nowhere else), and each head whose
-- quantity the held units cover gets an order, one of orders per buyer,
-- in this same script. A head who holds an active order already
-- (possible only after Redis lost and re-loaded the sale's claims) leaves
-- the line as ADMITTED with that order, and the next is asked. Once nobody
-- waits, or the sale has ended (the waitlist has expired), every held unit
-- goes to the stock for open claims. With orders used up while a head's
-- quantity is covered the units stay held (reconciliation's hand-over
-- serves them). With one set (a move landing in one segment of a sale of
-- several) it serves the line's head only: the units beyond what the head
-- took, and all of them when this line is empty, are returned as rest
-- for the caller to send on to whichever segment's head came next, so a
-- later buyer of this segment is not served before an earlier one of
-- another.
-- Returns the buyers admitted as {user, order, pay_by} triples (a flat
-- list), the units that went to the stock, and the rest (with one).
local function give_units(k, n, now, t, orders, one)
  local out = {}
  local held = tonumber(redis.call('GET', k.held) or '0') + n
  -- held is counted here alone until the end: a buyer admitted below who
  -- empties the line (admit's leave_line) must not find the key and give
  -- its units to the stock a second time.
  redis.call('DEL', k.held)
  local ends = redis.call('HGET', k.meta, 'ends_ms')
  local open = ends and now < tonumber(ends)
  local used = 0
  while open do
    local head = redis.call('ZRANGE', k.wait, 0, 0)
    if #head == 0 then
      break
    end
    local user = head[1]
    local active = redis.call('HGET', k.claims, user)
    if active then
      redis.call('ZREM', k.wait, user)
      redis.call('HDEL', k.lines, user)
      redis.call('HSET', k.waited, user, active)
      local expire = redis.call('HGET', k.meta, 'expire_ms')
      if expire then
        redis.call('PEXPIREAT', k.waited, expire)
      end
    else
      local _, q = line_of(k, user)
      if held < q or used >= #orders then
        break
      end
      used = used + 1
      local pay_by = admit(k, user, orders[used], now,
        {sale = t.sale, timeout_ms = t.timeout_ms, price = t.price, currency = t.currency, sku = t.sku, q = q}, true)
      held = held - q
      out[#out + 1] = user
      out[#out + 1] = orders[used]
      out[#out + 1] = pay_by
      if one then
        break
      end
    end
  end
  local back, rest = 0, 0
  if not open then
    back, held = held, 0
  elseif one then
    if used > 0 or redis.call('ZCARD', k.wait) == 0 then
      rest, held = held, 0
    end
  elseif redis.call('ZCARD', k.wait) == 0 then
    back, held = held, 0
  end
  if held > 0 then
    redis.call('SET', k.held, held)
    local expire = redis.call('HGET', k.meta, 'expire_ms')
    if expire then
      redis.call('PEXPIREAT', k.held, expire)
    end
  else
    redis.call('DEL', k.held)
  end
  if back > 0 then
    redis.call('INCRBY', k.stock, back)
  end
  return out, back, rest
end
