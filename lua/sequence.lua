-- sequence.lua: the next join sequence of a sale of several segments, kept in
-- segment 0's meta so that every segment's waitlist is one line. A meta that
-- warm-up did not write (the segment was lost) gets no sequence and is not
-- created: the join fails closed until re-warm.
--
-- KEYS[1] meta    seckill:{sN}:meta
--
-- Returns the sequence, or -1 when segment 0 is not warmed.
if redis.call('HEXISTS', KEYS[1], 'parts') == 0 then
  return -1
end
return redis.call('HINCRBY', KEYS[1], 'wait_seq', 1)
