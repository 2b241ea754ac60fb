-- admit.lua: the functions every script that gives units to a buyer
-- shares. lua.go puts this file in front of claim.lua, join.lua,
-- release.lua, handover.lua, give.lua and rewarm.lua, so an admission is
-- written in one place whether it comes from a claim, from a join that
-- found units in stock, or from units handed to the waitlist, and every
-- admitted order looks the same to the relay, the API and reconciliation.
--
-- The functions take a sale's keys for one variant as a table k (the
-- calling script fills it from its KEYS): k.stock (the variant's units in
-- this segment), k.claims, k.meta, k.outbox, k.admitted, k.wait (sorted set
-- user -> join sequence: the variant's waitlist, head first), k.waited (hash
-- user -> order id the waitlist gave them), k.lines (hash user -> the wait
-- key of the one line they are in, of whichever variant) and k.units (hash sku -> units
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
    'p', pay_by, 'a', tostring(q * tonumber(t.price)), 'c', t.currency}
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
  local line = redis.call('HGET', k.lines, user)
  local left = redis.call('ZREM', k.wait, user) == 1
  if line then
    left = redis.call('ZREM', line, user) == 1 or left
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

-- hand_over gives one unit of the variant the caller holds to the first
-- buyer waiting in the variant's line who holds no active order, as order
-- (one unit: the waitlist takes one unit per buyer). A waiting buyer who holds one
-- (possible only after Redis lost and re-loaded the sale's claims) leaves
-- the waitlist as ADMITTED with that order, and the next is asked. Once
-- the sale has ended the waitlist has expired: nobody is given the unit.
-- Returns user, pay_by of the buyer admitted, or nil when nobody was.
local function hand_over(k, order, now, t)
  local ends = redis.call('HGET', k.meta, 'ends_ms')
  if not ends or now >= tonumber(ends) then
    return nil
  end
  while true do
    local head = redis.call('ZPOPMIN', k.wait)
    if #head == 0 then
      return nil
    end
    local user = head[1]
    redis.call('HDEL', k.lines, user)
    local active = redis.call('HGET', k.claims, user)
    if not active then
      return user, admit(k, user, order, now, t, true)
    end
    redis.call('HSET', k.waited, user, active)
    local expire = redis.call('HGET', k.meta, 'expire_ms')
    if expire then
      redis.call('PEXPIREAT', k.waited, expire)
    end
  end
end

