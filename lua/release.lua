-- release.lua: the Redis half of compensation for one order, exactly once.
-- The user's claim record is the idempotency key: only while it still names
-- this order is it removed (so the user may claim again) and, when asked,
-- the unit returned. A retry, a second compensation or a claim record lost
-- with Redis finds nothing to do. Stock is only returned to a warmed
-- counter: a missing key is re-warmed from Postgres, which already counts
-- this unit, so creating it here would give Redis stock the DB lacks.
--
-- KEYS[1] stock   seckill:{sN}:stock
-- KEYS[2] claims  seckill:{sN}:claims
-- ARGV[1] user id
-- ARGV[2] order id
-- ARGV[3] "1" to return the unit to the counter, "0" to only forget the claim
-- ARGV[4] pub/sub channel told that the sale has stock again
-- ARGV[5] sale id (the message)
--
-- Returns 1 when the claim was released now, 0 when there was nothing to do.
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('INCR', KEYS[1])
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
return 1
