-- rewarm.lua: load a sale whose keys Redis lost, from the database's
-- snapshot, unless the counter is live again. Like warm.lua, but it also
-- restores the claims of the orders still active, so one buyer still gets
-- one active order.
--
-- KEYS[1] stock   seckill:{sN}:stock
-- KEYS[2] meta    seckill:{sN}:meta
-- KEYS[3] outbox  seckill:{sN}:outbox
-- KEYS[4] claims  seckill:{sN}:claims
-- ARGV[1] units to load: the database's available minus the orders written
--         but not yet holding a unit (they will take theirs from available)
-- ARGV[2] starts_ms
-- ARGV[3] ends_ms
-- ARGV[4] expire_ms
-- ARGV[5] consumer group of the outbox relay
-- ARGV[6] how many segments the sale's stock has (this is one of them)
-- ARGV[7] the highest join sequence any live segment's waitlist holds (segment 0
--         numbers the joins of a sale of several segments: a re-loaded segment 0
--         goes on after it, so the line keeps its order)
-- ARGV[8..] user id, order id, user id, order id, ... of the active orders
--         of this segment's buyers
--
-- Returns 1 when the sale was loaded now, 0 when it was already live.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('DEL', KEYS[4])
for i = 8, #ARGV, 2 do
  redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
end
if #ARGV >= 8 then
  redis.call('PEXPIREAT', KEYS[4], ARGV[4])
end
redis.call('HSET', KEYS[2], 'starts_ms', ARGV[2], 'ends_ms', ARGV[3], 'expire_ms', ARGV[4], 'parts', ARGV[6])
if tonumber(ARGV[7]) > 0 then
  redis.call('HSET', KEYS[2], 'wait_seq', ARGV[7])
end
redis.call('PEXPIREAT', KEYS[2], ARGV[4])
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[4])
pcall(redis.call, 'XGROUP', 'CREATE', KEYS[3], ARGV[5], '0', 'MKSTREAM')
redis.call('PEXPIREAT', KEYS[3], ARGV[4])
return 1
