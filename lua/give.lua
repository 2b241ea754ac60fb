-- give.lua: units taken from one segment (take.lua, or release.lua parking a
-- released unit) arrive in another, exactly once. admit.lua comes first.
-- Each unit goes to the first waiting buyer of this segment (a new order for
-- them, as release.lua does), or with nobody waiting to the stock.
--
-- KEYS[1] stock, KEYS[2] claims, KEYS[3] meta, KEYS[4] outbox,
-- KEYS[5] admitted, KEYS[6] wait, KEYS[7] waited   (seckill:{sN.p}:...)
-- KEYS[8] moved   set of the move ids this segment was given (the variant's)
-- KEYS[9] units   hash sku -> units the claims hold
-- KEYS[10] lines  hash user -> "<quantity>:<wait key>" of their line
-- KEYS[11] held   the variant's units held for its line's head
-- KEYS[12] moves  the variant's moves taken from this segment (a re-park)
-- (KEYS[1], KEYS[6] and KEYS[8] are the variant's: stock[:<sku>], ...)
-- ARGV[1] move id
-- ARGV[2] units
-- ARGV[3] sale id
-- ARGV[4] payment timeout ms, ARGV[5] price cents per unit, ARGV[6] currency
-- ARGV[7] pub/sub channel told that the sale has stock again
-- ARGV[8] the join sequence the caller saw at the head of this segment's
--         waitlist ('' when it expects nobody): when the head has changed
--         meanwhile (a claim or a leave took it), nothing happens and the
--         caller gives it again without expecting anyone
-- ARGV[9] the variant's sku
-- ARGV[10] "1" to serve this segment's first waiting buyer only and park
--          the rest as move ARGV[1].."+" (not aimed: the caller lands it
--          where the next buyer in line waits); "0" to give every unit
--          here (nobody waits elsewhere)
-- ARGV[11..] fresh order ids for waiting buyers, at most one per unit
--
-- Returns {given, parked, user, order, pay_by, ...}: parked is 1 when
-- units were parked as move ARGV[1].."+", and given is
-- 0 when this move was given before (nothing happens again), 2 when the
-- head of the waitlist is not the one expected (nothing happens), 3 when
-- this segment is not warmed (nothing happens: the move stays in flight, and
-- re-warm, which leaves units in flight out of what it loads, is followed
-- by reconciliation landing it), 1 otherwise, followed by the waiting
-- buyers who got a unit.
if redis.call('SISMEMBER', KEYS[8], ARGV[1]) == 1 then
  return {0}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {3}
end
if ARGV[8] ~= '' then
  local head = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
  if #head == 0 or tonumber(head[2]) ~= tonumber(ARGV[8]) then
    return {2}
  end
end
redis.call('SADD', KEYS[8], ARGV[1])
local expire = redis.call('HGET', KEYS[3], 'expire_ms')
if expire then
  redis.call('PEXPIREAT', KEYS[8], expire)
end
local k = {stock = KEYS[1], claims = KEYS[2], meta = KEYS[3], outbox = KEYS[4],
  admitted = KEYS[5], wait = KEYS[6], waited = KEYS[7], units = KEYS[9], lines = KEYS[10], held = KEYS[11]}
local t = {sale = ARGV[3], timeout_ms = ARGV[4], price = ARGV[5], currency = ARGV[6], sku = ARGV[9]}
local now = now_ms()
local handed, back, rest = give_units(k, tonumber(ARGV[2]), now, t, {unpack(ARGV, 11)}, ARGV[10] == '1')
if back > 0 then
  redis.call('PUBLISH', ARGV[7], ARGV[3])
end
local out = {1, 0}
if rest > 0 then
  write_move(KEYS[12], KEYS[3], ARGV[1] .. '+', {units = rest, dest = -1, at = now})
  out[2] = 1
end
for _, v in ipairs(handed) do
  out[#out + 1] = v
end
return out
