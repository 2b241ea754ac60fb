-- settle.lua: a move is done (its units were given, give.lua): forget it
-- in the part it came from, once.
--
-- KEYS[1] moves   seckill:{sN.p}:moves
-- KEYS[2] meta    seckill:{sN.p}:meta
-- ARGV[1] move id
--
-- Returns 1 when the move was settled now, 0 when it was not in flight.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
local n = tonumber(string.sub(v, 1, string.find(v, ':', 1, true) - 1))
redis.call('HINCRBY', KEYS[2], 'moving', -n)
return 1
