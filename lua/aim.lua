-- aim.lua: fix where a parked released unit goes, once. release.lua parks
-- the unit as in flight with no destination; the first mover to aim it
-- decides, and every later mover (a retried activity, reconciliation)
-- reads that decision instead of choosing again: so the unit lands in one
-- part only (give.lua's moved set stops a second landing there).
--
-- KEYS[1] moves   seckill:{sN.p}:moves   move id -> "<units>:<dest>:<ms>"
-- ARGV[1] move id
-- ARGV[2] the part the caller would send it to
--
-- Returns the part it goes to (ARGV[2], or the one aimed before), or -1
-- when the move is no longer in flight (it was settled).
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
  return -1
end
local first = string.find(v, ':', 1, true)
local second = string.find(v, ':', first + 1, true)
local dest = string.sub(v, first + 1, second - 1)
if dest ~= '' then
  return tonumber(dest)
end
redis.call('HSET', KEYS[1], ARGV[1], string.sub(v, 1, first) .. ARGV[2] .. string.sub(v, second))
return tonumber(ARGV[2])
