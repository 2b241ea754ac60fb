-- warm.lua: load one segment of a sale into Redis unless it is already
-- live: every variant's counter in one step.
-- A live counter is never overwritten: after a restart it may be lower than
-- the configured stock, and resetting it would sell units twice. The first
-- variant's counter marks the segment live (the counters are written, and
-- expire, together).
--
-- KEYS[1] meta    seckill:{sN}:meta
-- KEYS[2] outbox  seckill:{sN}:outbox
-- KEYS[3..] stock seckill:{sN}:stock[:<sku>] of each variant, the sale's
--           first variant first
-- ARGV[1] starts_ms (unix milliseconds)
-- ARGV[2] ends_ms
-- ARGV[3] expire_ms: when the sale's keys may go (well after the last order
--         of the sale can have settled)
-- ARGV[4] consumer group of the outbox relay
-- ARGV[5] how many segments the sale's stock has (this is one of them)
-- ARGV[6] presale_ms: when the sale's presale members may claim ('' for a
--         sale without a presale)
-- ARGV[7..] pairs sku, units to load into its counter, in KEYS' order
--
-- meta's skus lists the variants' skus, comma-separated, in the sale's
-- order, so any process can find every variant's keys.
-- Returns 1 when the segment was loaded now, 0 when it was already live.
if redis.call('EXISTS', KEYS[3]) == 1 then
  return 0
end
local skus = {}
for i = 3, #KEYS do
  local a = 7 + 2 * (i - 3)
  skus[#skus + 1] = ARGV[a]
  redis.call('SET', KEYS[i], ARGV[a + 1], 'PXAT', ARGV[3])
end
redis.call('HSET', KEYS[1], 'starts_ms', ARGV[1], 'ends_ms', ARGV[2], 'expire_ms', ARGV[3], 'parts', ARGV[5],
  'skus', table.concat(skus, ','))
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[1], 'presale_ms', ARGV[6])
end
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
-- The relay's group must exist before the first entry, from id 0, so no
-- admitted claim is ever skipped. BUSYGROUP (it exists) is fine.
pcall(redis.call, 'XGROUP', 'CREATE', KEYS[2], ARGV[4], '0', 'MKSTREAM')
redis.call('PEXPIREAT', KEYS[2], ARGV[3])
return 1
