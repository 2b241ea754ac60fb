-- open.lua: opens a sale with a lobby to claims once its draw is done, by
-- setting the segment's start to the sale's real starts_at (until then it
-- is held far in the future, see claim.lua's ARGV[13]).
--
-- KEYS[1] meta  seckill:{sN}:meta (of one segment)
-- ARGV[1] starts_ms
--
-- Returns 1 when set, 0 when the segment is not loaded (a re-warm loads
-- it with the start the database says, which is open once drawn).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'starts_ms', ARGV[1])
return 1
