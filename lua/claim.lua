-- claim.lua: the whole admission decision for one claim of quantity units
-- of one variant, atomically: all the units or none.
-- Every check runs before any write, so a refused claim changes nothing
-- (except the rate limiter's log of the attempt). admit.lua comes first.
--
-- KEYS[1] stock   seckill:{sN}:stock[:<sku>]  string counter of the
--         variant's units left ("stock" for the variant "default")
-- KEYS[2] claims  seckill:{sN}:claims  hash user id -> order id
-- KEYS[3] meta    seckill:{sN}:meta    hash starts_ms, ends_ms, expire_ms,
--         presale_ms (only for a sale with a presale)
-- KEYS[4] outbox  seckill:{sN}:outbox  stream of admitted claims
-- KEYS[5] idem    seckill:{sN}:idem:<user, base64url>:<key hash>  the first decision
--         for this user's Idempotency-Key, "code:order id" (used when
--         ARGV[5] is "1")
-- KEYS[6] rate    seckill:{sN}:rl:<user, base64url>  sorted set of this user's recent
--         attempts (used when ARGV[6] > 0)
-- KEYS[7] admitted seckill:{sN}:admitted  hash order id -> "<pay_by_ms>:<user>"
--         ("<pay_by_ms>d:<user>" for the draw's, see admit.lua) of every
--         admission, so an order can be found and shown (QUEUED, with its
--         pay_by) before its saga has written it
-- KEYS[8] wait    seckill:{sN}:wait[:<sku>]  the variant's waitlist (a
--         waiting buyer who is admitted by a claim leaves it as ADMITTED)
-- KEYS[9] waited  seckill:{sN}:waited  hash user -> order the waitlist gave
-- KEYS[10] units  seckill:{sN}:units   hash sku -> units the claims hold
-- KEYS[11] lines  seckill:{sN}:lines   hash user -> the wait key of their line
-- ARGV[1] user id
-- ARGV[2] order id (fresh, from the caller's time-ordered generator)
-- ARGV[3] sale id
-- ARGV[4] seconds to keep the idempotency record
-- ARGV[5] "1" when the request carries an Idempotency-Key
-- ARGV[6] attempts allowed per user in the sliding window (0: no limit)
-- ARGV[7] the window, milliseconds
-- ARGV[8] the sale's payment timeout, milliseconds: pay_by = admission + it
-- ARGV[9] the variant's price, cents per unit (the amount owed is
--         quantity x price)
-- ARGV[10] its currency
-- ARGV[11] "1" when SOLD_OUT is the final answer; "0" on one segment of a
--          sale of several, whose other segments may still lend it units:
--          a SOLD_OUT is then not recorded for the Idempotency-Key
-- ARGV[12] the claim request's W3C traceparent ('' when not tracing): the
--          outbox entry carries it, so the saga joins the claim's trace
-- ARGV[13] "1" when the sale's draw admits a winner (docs/API.md "Fair
--          start"): a sale with a lobby keeps starts_ms far in the future
--          until its draw is done, so open claims get SALE_NOT_STARTED
--          (the API answers DRAW_IN_PROGRESS from starts_at on); only the
--          draw's admissions pass that check
-- ARGV[14] the variant's sku
-- ARGV[15] quantity: the units asked for, 1..the sale's limit per buyer
-- ARGV[16] "1" when the buyer's token carries the sale's presale claim
--          (docs/API.md "Presale"): from meta's presale_ms on they pass
--          the start check; everyone else waits for starts_ms
--
-- With an Idempotency-Key, a recorded decision ("<code>:<order id>:<q>/<sku>")
-- is returned as it was, with the third element 1 (replayed), and nothing
-- else happens; the same key with another item (sku, quantity) is code 11,
-- and nothing is decided. A record written before items (no third part)
-- is one unit of "default". Otherwise the decision is recorded. UNAVAILABLE (not warmed), RATE_LIMITED and
-- SALE_NOT_STARTED are never recorded: they are not answers, only "try
-- again" (later).
--
-- Returns {code, value, replayed (0 or 1), pay_by_ms ('' unless ADMITTED)}:
-- (the codes are those of join.lua; redisstore maps each to its seckill.Outcome)
--   0 ADMITTED         value = ARGV[2]; stock decremented, the admission
--                      written by admit() (claim, admission, outbox
--                      entry); pay_by fixed here, on Redis' clock
--   1 SOLD_OUT
--   2 ALREADY_CLAIMED  value = the user's active order
--   3 SALE_NOT_STARTED
--   4 SALE_ENDED
--   5 UNAVAILABLE      the stock key or meta is missing: fail closed, never
--                      read nil as zero or as stock
--   6 RATE_LIMITED     value = milliseconds until an attempt is allowed
--  10 NOT_ENOUGH_STOCK value = the variant's units left (fewer than the
--                      quantity, at least one)
--  11 IDEMPOTENCY_KEY_REUSED  value = '': the key's first request asked
--                      for another item
local idem = ARGV[5] == '1'
local q = tonumber(ARGV[15])
local item = q .. '/' .. ARGV[14]
if idem then
  local prev = redis.call('GET', KEYS[5])
  if prev then
    local sep = string.find(prev, ':', 1, true)
    local code = tonumber(string.sub(prev, 1, sep - 1))
    local id = string.sub(prev, sep + 1)
    local was = '1/default'
    local sep2 = string.find(id, ':', 1, true)
    if sep2 then
      id, was = string.sub(id, 1, sep2 - 1), string.sub(id, sep2 + 1)
    end
    if was ~= item then
      return {11, '', 0, ''}
    end
    local pay_by = ''
    if code == 0 then
      local adm = redis.call('HGET', KEYS[7], id)
      if adm then
        pay_by = string.match(adm, '^%d+') or '' -- without the draw's marker
      end
    end
    return {code, id, 1, pay_by}
  end
end

local function decide(code, id, pay_by)
  if idem then
    redis.call('SET', KEYS[5], code .. ':' .. id .. ':' .. item, 'EX', ARGV[4])
  end
  return {code, id, 0, pay_by or ''}
end

local now = now_ms()

local limit = tonumber(ARGV[6])
if limit > 0 then
  local span = tonumber(ARGV[7])
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now - span)
  if redis.call('ZCARD', KEYS[6]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
    return {6, tostring(tonumber(oldest[2]) + span - now), 0, ''}
  end
  redis.call('ZADD', KEYS[6], now, ARGV[2])
  redis.call('PEXPIRE', KEYS[6], span)
end

local stock = redis.call('GET', KEYS[1])
if not stock then
  return {5, '', 0, ''}
end
local window = redis.call('HMGET', KEYS[3], 'starts_ms', 'ends_ms', 'presale_ms')
if not window[1] or not window[2] then
  return {5, '', 0, ''}
end
local member = ARGV[16] == '1' and window[3] and now >= tonumber(window[3])
if now < tonumber(window[1]) and ARGV[13] ~= '1' and not member then
  -- "Not yet" is not recorded under an Idempotency-Key: a retry after the
  -- start (or after a sale's draw) is decided afresh.
  return {3, '', 0, ''}
end
-- A buyer who holds an order is told so before "ended": the draw's retry
-- of an admission an earlier attempt made must find that order whenever
-- the sale ends, on this clock, against the draw's own (docs/DESIGN.md,
-- invariant 9).
local existing = redis.call('HGET', KEYS[2], ARGV[1])
if existing then
  return decide(2, existing)
end
if now >= tonumber(window[2]) then
  return decide(4, '')
end
if tonumber(stock) < q then
  -- Not final on one segment of a sale of several: the others may still
  -- lend it units (the caller borrows and asks again).
  local code, left = 1, ''
  if tonumber(stock) > 0 then
    code, left = 10, stock
  end
  if ARGV[11] == '0' then
    return {code, left, 0, ''}
  end
  return decide(code, left)
end

redis.call('DECRBY', KEYS[1], q)
local k = {stock = KEYS[1], claims = KEYS[2], meta = KEYS[3], outbox = KEYS[4],
  admitted = KEYS[7], wait = KEYS[8], waited = KEYS[9], units = KEYS[10], lines = KEYS[11]}
local pay_by = admit(k, ARGV[1], ARGV[2], now,
  {sale = ARGV[3], timeout_ms = ARGV[8], price = ARGV[9], currency = ARGV[10], trace = ARGV[12],
   drawn = ARGV[13] == '1', sku = ARGV[14], q = q}, false)
return decide(0, ARGV[2], pay_by)
