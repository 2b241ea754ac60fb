-- leave.lua: a buyer leaves a sale's waitlist for good, atomically. A line
-- left empty gives the units held for its head back to the stock for open
-- claims (nobody waits for them now); a line whose head changed keeps
-- them for the new head (the next release, or reconciliation's hand-over,
-- gives them).
--
-- KEYS[1] wait    the line the buyer is in (seckill:{sN}:wait[:<sku>])
-- KEYS[2] lines   hash user -> "<quantity>:<wait key>"
-- KEYS[3] waited  hash user -> order the waitlist gave
-- KEYS[4] held    the line's held units (seckill:{sN}:held[:<sku>])
-- KEYS[5] stock   the line's variant's stock
-- KEYS[6] meta    the buyer's segment's meta (seckill:{sN}:meta)
-- ARGV[1] user id
-- ARGV[2] pub/sub channel told that the sale has stock again, ARGV[3] sale id
--
-- Returns 1 when the buyer was waiting (and left now), 0 otherwise, and -1
-- when the segment is not loaded (its keys lost, not re-warmed yet): the
-- re-warm may be putting them back from the database's rows read before
-- the leave, so the leave must be tried again once it has.
if redis.call('EXISTS', KEYS[6]) == 0 then
  return -1
end
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if redis.call('ZCARD', KEYS[1]) == 0 then
  local held = tonumber(redis.call('GET', KEYS[4]) or '0')
  if held > 0 and redis.call('EXISTS', KEYS[5]) == 1 then
    redis.call('INCRBY', KEYS[5], held)
    redis.call('DEL', KEYS[4])
    redis.call('PUBLISH', ARGV[2], ARGV[3])
  end
end
return removed
