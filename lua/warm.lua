-- warm.lua: load a sale into Redis unless it is already live.
-- A live counter is never overwritten: after a restart it may be lower than
-- the configured stock, and resetting it would sell units twice.
--
-- KEYS[1] stock   seckill:{sN}:stock
-- KEYS[2] meta    seckill:{sN}:meta
-- KEYS[3] outbox  seckill:{sN}:outbox
-- ARGV[1] units to load
-- ARGV[2] starts_ms (unix milliseconds)
-- ARGV[3] ends_ms
-- ARGV[4] expire_ms: when the sale's keys may go (well after the last order
--         of the sale can have settled)
-- ARGV[5] consumer group of the outbox relay
-- ARGV[6] how many segments the sale's stock has (this is one of them)
--
-- Returns 1 when the sale was loaded now, 0 when it was already live.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[2], 'starts_ms', ARGV[2], 'ends_ms', ARGV[3], 'expire_ms', ARGV[4], 'parts', ARGV[6])
redis.call('PEXPIREAT', KEYS[2], ARGV[4])
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[4])
-- The relay's group must exist before the first entry, from id 0, so no
-- admitted claim is ever skipped. BUSYGROUP (it exists) is fine.
local ok = pcall(redis.call, 'XGROUP', 'CREATE', KEYS[3], ARGV[5], '0', 'MKSTREAM')
redis.call('PEXPIREAT', KEYS[3], ARGV[4])
return 1
