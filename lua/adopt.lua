-- adopt.lua: bring one segment of a sale warmed before variants (v3) to
-- the v4 layout, once: its one variant is "default" and every claim holds
-- one unit of it, so the units hash (what claims hold, per variant, the
-- count invariant 7 reads) starts at the number of claims. A segment
-- warmed since v4 (meta has skus) or not loaded is left alone.
--
-- KEYS[1] meta    seckill:{sN}:meta
-- KEYS[2] claims  seckill:{sN}:claims
-- KEYS[3] units   seckill:{sN}:units
--
-- Returns 1 when the segment was adopted now, 0 otherwise.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'skus') == 1 then
  return 0
end
local n = redis.call('HLEN', KEYS[2])
if n > 0 then
  redis.call('HSET', KEYS[3], 'default', n)
  local expire = redis.call('HGET', KEYS[1], 'expire_ms')
  if expire then
    redis.call('PEXPIREAT', KEYS[3], expire)
  end
end
redis.call('HSET', KEYS[1], 'skus', 'default')
return 1
