-- release.lua: the Redis half of compensation for one order, exactly once.
-- admit.lua and move.lua come first.
--
-- The user's claim record is the idempotency key: only while it still names
-- this order is it removed (so the user may claim again) and, when asked,
-- the unit given back: to the first waiting buyer (hand_over: an order for
-- them, in this same script, so the unit is never also open to a claim),
-- or, with nobody waiting, to the counter for open claims. On a sale of
-- several segments the unit is parked instead, as a move not yet aimed, and
-- the caller lands it in the segment whose waiting buyer came first
-- (aim.lua, give.lua). A retry, a second compensation or a claim record
-- lost with Redis finds nothing to do. A unit is only given back to a
-- warmed sale: a missing counter is re-warmed from Postgres, which already
-- counts this unit, so creating it here would give Redis stock the DB
-- lacks.
--
-- Every release, whatever it finds, marks the order released (KEYS[9]):
-- reconciliation never writes back the claim of an order released before
-- (restore.lua), so a claim restored from a stale read cannot give the
-- unit back a second time.
--
-- KEYS[1] stock, KEYS[2] claims, KEYS[3] meta, KEYS[4] outbox,
-- KEYS[5] admitted, KEYS[6] wait, KEYS[7] waited   (seckill:{sN}:...)
-- KEYS[8] moves, KEYS[9] released (set of order ids)
-- ARGV[1] user id
-- ARGV[2] order id
-- ARGV[3] "1" to give the unit back, "0" to only forget the claim (the
--         order never held one)
-- ARGV[4] pub/sub channel told that the sale has stock again
-- ARGV[5] sale id (the message)
-- ARGV[6] a fresh order id for the waiting buyer who gets the unit
-- ARGV[7] the sale's payment timeout, milliseconds (their pay_by is now
--         plus it)
-- ARGV[8] amount, cents
-- ARGV[9] currency
-- ARGV[10] the move id a parked unit gets (a sale of several segments)
--
-- Returns {released, user, pay_by, parked}: released 1 when the claim was
-- released now, 0 when there was nothing to do; user and pay_by name the
-- waiting buyer who got the unit as order ARGV[6] ('' when nobody did);
-- parked 1 when the unit waits as move ARGV[10] for the caller to land.
local expire = redis.call('HGET', KEYS[3], 'expire_ms')
redis.call('SADD', KEYS[9], ARGV[2])
if expire then
  redis.call('PEXPIREAT', KEYS[9], expire)
end
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return {0, '', '', 0}
end
redis.call('HDEL', KEYS[2], ARGV[1])
if ARGV[3] == '0' or redis.call('EXISTS', KEYS[1]) == 0 then
  return {1, '', '', 0}
end
local segments = tonumber(redis.call('HGET', KEYS[3], 'parts') or '1')
if segments > 1 then
  write_move(KEYS[8], KEYS[3], ARGV[10], {units = 1, dest = -1, at = now_ms()})
  return {1, '', '', 1}
end
local k = {stock = KEYS[1], claims = KEYS[2], meta = KEYS[3], outbox = KEYS[4],
  admitted = KEYS[5], wait = KEYS[6], waited = KEYS[7]}
local user, pay_by = hand_over(k, ARGV[6], now_ms(),
  {sale = ARGV[5], timeout_ms = ARGV[7], amount = ARGV[8], currency = ARGV[9]})
if user then
  return {1, user, pay_by, 0}
end
redis.call('INCR', KEYS[1])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return {1, '', '', 0}
