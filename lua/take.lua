-- take.lua: take units out of one part of a sale's stock, to be given to
-- another part by give.lua (docs/DESIGN.md "Where a released unit goes").
-- The units are recorded as in flight until the mover settles the move, so
-- a mover that dies between the two scripts leaves a record that
-- reconciliation finishes: a unit is in the stock, in a claim, or in
-- flight, never nowhere.
--
-- KEYS[1] stock   seckill:{sN.p}:stock
-- KEYS[2] meta    seckill:{sN.p}:meta   (its "moving" counts units in flight)
-- KEYS[3] moves   seckill:{sN.p}:moves  move id -> "<units>:<dest part>:<ms>"
-- ARGV[1] move id (unique per move)
-- ARGV[2] the most units to take
-- ARGV[3] the part the units go to
--
-- Returns the units taken: 0 when the part has none. A repeat of a move
-- already taken returns its units again and takes nothing.
local prev = redis.call('HGET', KEYS[3], ARGV[1])
if prev then
  return tonumber(string.sub(prev, 1, string.find(prev, ':', 1, true) - 1))
end
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = math.min(stock, tonumber(ARGV[2]))
if n <= 0 then
  return 0
end
local t = redis.call('TIME')
redis.call('DECRBY', KEYS[1], n)
redis.call('HSET', KEYS[3], ARGV[1], n .. ':' .. ARGV[3] .. ':' .. (tonumber(t[1]) * 1000))
redis.call('HINCRBY', KEYS[2], 'moving', n)
local expire = redis.call('HGET', KEYS[2], 'expire_ms')
if expire then
  redis.call('PEXPIREAT', KEYS[3], expire)
end
return n
