-- aim.lua: fix where a parked released unit goes, once. release.lua parks
-- the unit as in flight with no destination; the first mover to aim it
-- decides, and every later mover (a retried activity, reconciliation)
-- reads that decision instead of choosing again: so the unit lands in one
-- segment only (give.lua's moved set stops a second landing there).
-- move.lua comes first.
--
-- KEYS[1] moves   seckill:{sN.p}:moves
-- KEYS[2] meta    seckill:{sN.p}:meta
-- ARGV[1] move id
-- ARGV[2] the segment the caller would send it to
--
-- Returns {segment, aimed}: the segment it goes to (ARGV[2], or the one aimed
-- before) and 1 when this call aimed it (0 when an earlier one had); segment
-- is -1 when the move is no longer in flight (it was forgotten).
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
  return {-1, 0}
end
local m = read_move(v)
if m.dest >= 0 then
  return {m.dest, 0}
end
m.dest = tonumber(ARGV[2])
write_move(KEYS[1], KEYS[2], ARGV[1], m)
return {m.dest, 1}
