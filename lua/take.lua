-- take.lua: take units out of one segment of a sale's stock, to be given to
-- another segment by give.lua (docs/DESIGN.md "A move between segments"). The
-- units are recorded as in flight (move.lua's record) until the mover
-- forgets the move, so a mover that dies between the scripts leaves a
-- record that reconciliation finishes: a unit is in a stock, in a claim,
-- or in flight, never nowhere. move.lua comes first.
--
-- KEYS[1] stock   seckill:{sN.p}:stock
-- KEYS[2] meta    seckill:{sN.p}:meta
-- KEYS[3] moves   seckill:{sN.p}:moves
-- ARGV[1] move id (unique per move)
-- ARGV[2] the most units to take
-- ARGV[3] the segment the units go to
--
-- Returns the units taken: 0 when the segment has none. A repeat of a move
-- already taken returns its units again and takes nothing.
local prev = redis.call('HGET', KEYS[3], ARGV[1])
if prev then
  return read_move(prev).units
end
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = math.min(stock, tonumber(ARGV[2]))
if n <= 0 then
  return 0
end
redis.call('DECRBY', KEYS[1], n)
write_move(KEYS[3], KEYS[2], ARGV[1], {units = n, dest = tonumber(ARGV[3]), at = now_ms()})
return n
