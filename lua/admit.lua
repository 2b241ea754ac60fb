-- admit.lua: the functions every script that gives a unit to a buyer
-- shares. lua.go puts this file in front of claim.lua, join.lua,
-- release.lua, handover.lua and give.lua, so an admission is written in one place
-- whether it comes from a claim, from a join that found a unit in stock,
-- or from a unit handed to the waitlist, and every admitted order looks
-- the same to the relay, the API and reconciliation.
--
-- The functions take a sale's keys as a table k (the calling script fills
-- it from its KEYS): k.stock, k.claims, k.meta, k.outbox, k.admitted,
-- k.wait (sorted set user -> join sequence: the waitlist, head first) and
-- k.waited (hash user -> order id the waitlist gave them), and the terms
-- of an admission as a table t: t.sale (sale id), t.timeout_ms (payment
-- timeout), t.amount (cents), t.currency.

-- admit records user's admission as order (an id string) at now: the
-- claim (one active order per user), the admission ("<pay_by>:<user>", or
-- "<pay_by>d:<user>" when t.drawn, so the order can be shown, paid and
-- cancelled as the draw's before its saga writes it; the marker sits in
-- the numeric field because a user id may hold ':') and the
-- outbox entry the relay starts the saga from (o order, u user, s sale, t
-- admission ms, p pay_by ms, a amount, c currency, and tp the claim's
-- traceparent when t.trace is one, and d "1" when t.drawn: the sale's draw
-- admitted this buyer, so the order row says so and the audit can hold
-- the draw's record to it). A buyer admitted
-- while waiting leaves the waitlist as ADMITTED with this order. It does
-- not touch the stock: the caller has taken the unit. pay_by is fixed here: now plus the payment timeout.
-- Returns pay_by (ms, a string).
local function admit(k, user, order, now, t, from_waitlist)
  local pay_by = tostring(now + tonumber(t.timeout_ms))
  local marker = ''
  if t.drawn then
    marker = 'd'
  end
  redis.call('HSET', k.claims, user, order)
  redis.call('HSET', k.admitted, order, pay_by .. marker .. ':' .. user)
  local expire = redis.call('HGET', k.meta, 'expire_ms')
  if expire then
    redis.call('PEXPIREAT', k.claims, expire)
    redis.call('PEXPIREAT', k.admitted, expire)
  end
  if from_waitlist then
    redis.call('HINCRBY', k.meta, 'waitlist_admissions', 1)
  end
  local entry = {'o', order, 'u', user, 's', t.sale, 't', tostring(now),
    'p', pay_by, 'a', t.amount, 'c', t.currency}
  if t.trace and t.trace ~= '' then
    entry[#entry + 1], entry[#entry + 2] = 'tp', t.trace
  end
  if t.drawn then
    entry[#entry + 1], entry[#entry + 2] = 'd', '1'
  end
  redis.call('XADD', k.outbox, '*', unpack(entry))
  if redis.call('ZREM', k.wait, user) == 1 or from_waitlist then
    redis.call('HSET', k.waited, user, order)
    if expire then
      redis.call('PEXPIREAT', k.waited, expire)
    end
  end
  return pay_by
end

-- hand_over gives one unit the caller holds to the first waiting buyer
-- who holds no active order, as order. A waiting buyer who holds one
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

