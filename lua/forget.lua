-- forget.lua: a move is done (its units were given, give.lua): forget it
-- in the segment it came from, once.
--
-- KEYS[1] moves   seckill:{sN.p}:moves
-- ARGV[1] move id
--
-- Returns 1 when the move was forgotten now, 0 when it was not in flight.
return redis.call('HDEL', KEYS[1], ARGV[1])
