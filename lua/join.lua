-- join.lua: a buyer joins a sale's waitlist, atomically. admit.lua comes
-- first.
--
-- The waitlist is first come, first served: a sorted set scored by a
-- join sequence (meta's wait_seq), so a buyer's position is their rank
-- plus one. A unit still in stock is never left there while buyers wait
-- (release.lua and handover.lua hand units to the waitlist first), so a
-- buyer who joins while the counter has a unit is first in line and is
-- admitted at once, exactly as by a claim.
--
-- KEYS[1] stock, KEYS[2] claims, KEYS[3] meta, KEYS[4] outbox,
-- KEYS[5] admitted, KEYS[6] wait, KEYS[7] waited, KEYS[8] units,
-- KEYS[9] lines (hash user -> "<quantity>:<wait key>" of the line they are
-- in), KEYS[10] held (the variant's units held for its line's head)
-- (seckill:{sN}:...; stock and wait are the variant's: one line per variant,
-- and a buyer waits in one line of a sale at most)
-- ARGV[1] user id
-- ARGV[2] most entries this segment's line may hold: SECKILL_WAITLIST_MAX
--         less the buyers waiting in the sale's other segments (0 or less:
--         the line is full)
-- ARGV[3] a fresh order id, used only if a unit is in stock
-- ARGV[4] sale id
-- ARGV[5] payment timeout ms, ARGV[6] price cents per unit, ARGV[7] currency
-- ARGV[8] the join sequence to use ('' for the next of this segment's own):
--         a sale of several segments numbers joins in segment 0, so that the
--         first to join is first across every segment
-- ARGV[9] "1" when the sale's draw queues an entrant (past the start check,
--         as claim.lua's ARGV[13])
-- ARGV[10] the variant's sku
-- ARGV[11] quantity: the units the buyer waits for (1..limit per buyer)
-- ARGV[12] "1" when the buyer is a member of the sale's presale: past the
--          start check from meta's presale_ms on (as claim.lua's ARGV[16])
--
-- Returns {code, value, extra}:
--   0 ADMITTED         value = ARGV[3], extra = its pay_by (ms)
--   2 ALREADY_CLAIMED  value = the user's active order
--   3 SALE_NOT_STARTED
--   4 SALE_ENDED
--   5 UNAVAILABLE      fail closed, as claim.lua
--   7 WAITING          value = position in this segment's line (1 is
--                      next): joined now; extra = the join sequence
--   8 ALREADY_WAITING  value = position in this segment's line, extra = the
--                      join sequence, and a fourth element: the wait key
--                      of the line they are in (another variant's, maybe)
--   9 WAITLIST_FULL
local stock = redis.call('GET', KEYS[1])
local window = redis.call('HMGET', KEYS[3], 'starts_ms', 'ends_ms', 'expire_ms', 'presale_ms')
if not stock or not window[1] or not window[2] then
  return {5, '', ''}
end
local now = now_ms()
local member = ARGV[12] == '1' and window[4] and now >= tonumber(window[4])
if now < tonumber(window[1]) and ARGV[9] ~= '1' and not member then
  return {3, '', ''}
end
-- An active order is told before "ended" (as claim.lua does).
local active = redis.call('HGET', KEYS[2], ARGV[1])
if active then
  return {2, active, ''}
end
if now >= tonumber(window[2]) then
  return {4, '', ''}
end
-- One place per buyer per sale, in one variant's line: lines names it (a
-- line of the same slot); a buyer who joined before lines existed is
-- found in this line.
local entry = redis.call('HGET', KEYS[9], ARGV[1])
local line = KEYS[6]
if entry then
  line = string.match(entry, '^%d+:(.*)$')
end
local rank = redis.call('ZRANK', line, ARGV[1])
if rank then
  return {8, tostring(rank + 1), redis.call('ZSCORE', line, ARGV[1]), line}
end
local k = {stock = KEYS[1], claims = KEYS[2], meta = KEYS[3], outbox = KEYS[4],
  admitted = KEYS[5], wait = KEYS[6], waited = KEYS[7], units = KEYS[8], lines = KEYS[9], held = KEYS[10]}
local q = tonumber(ARGV[11])
local t = {sale = ARGV[4], timeout_ms = ARGV[5], price = ARGV[6], currency = ARGV[7], sku = ARGV[10], q = q}
stock = tonumber(stock)
-- Units in stock are never left there while buyers wait (releases and
-- hand-overs give them to the line first), but the line can fill while
-- they sit there (units that came back before anyone waited, and the
-- draw queues its entrants in rank order): a buyer who joins while the
-- stock has their quantity is admitted at once, as by a claim.
local nobody = redis.call('ZCARD', KEYS[6]) == 0
if stock >= q then
  redis.call('DECRBY', KEYS[1], q)
  return {0, ARGV[3], admit(k, ARGV[1], ARGV[3], now, t, true)}
end
if redis.call('ZCARD', KEYS[6]) >= tonumber(ARGV[2]) then
  return {9, '', ''}
end
local seq = ARGV[8]
if seq == '' then
  seq = redis.call('HINCRBY', KEYS[3], 'wait_seq', 1)
end
redis.call('ZADD', KEYS[6], seq, ARGV[1])
redis.call('HSET', KEYS[9], ARGV[1], q .. ':' .. KEYS[6])
redis.call('HDEL', KEYS[7], ARGV[1])
if window[3] then
  redis.call('PEXPIREAT', KEYS[6], window[3])
  redis.call('PEXPIREAT', KEYS[9], window[3])
end
-- First in an empty line with too few units in stock: they are held for
-- the buyer (give_units), not left to claims, and the rest come as they
-- come back.
if nobody and stock > 0 then
  redis.call('DECRBY', KEYS[1], stock)
  local handed = give_units(k, stock, now, t, {ARGV[3]})
  if handed[1] == ARGV[1] then
    return {0, ARGV[3], handed[3]}
  end
end
return {7, tostring(redis.call('ZRANK', KEYS[6], ARGV[1]) + 1), tostring(seq)}
