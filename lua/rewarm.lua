-- rewarm.lua: load a sale whose keys Redis lost, from the database's
-- snapshot, unless the counter is live again. Like warm.lua, but it also
-- restores the claims of the orders still active, so one buyer still gets
-- one active order, and admits again, each with its order and a unit, the
-- admissions Redis lost before their orders were written (a drawn sale's
-- winners: the draw told them their order), in the same step, so no
-- claim can take their units first.
--
-- KEYS[1] stock    seckill:{sN}:stock
-- KEYS[2] meta     seckill:{sN}:meta
-- KEYS[3] outbox   seckill:{sN}:outbox
-- KEYS[4] claims   seckill:{sN}:claims
-- KEYS[5] admitted seckill:{sN}:admitted
-- KEYS[6] wait     seckill:{sN}:wait
-- KEYS[7] waited   seckill:{sN}:waited
-- ARGV[1] units to load: the database's available minus the orders written
--         but not yet holding a unit (they will take theirs from available),
--         the admissions to make again included
-- ARGV[2] starts_ms
-- ARGV[3] ends_ms
-- ARGV[4] expire_ms
-- ARGV[5] consumer group of the outbox relay
-- ARGV[6] how many segments the sale's stock has (this is one of them)
-- ARGV[7] the highest join sequence any live segment's waitlist holds (segment 0
--         numbers the joins of a sale of several segments: a re-loaded segment 0
--         goes on after it, so the line keeps its order)
-- ARGV[8..11] the terms of an admission: sale id, payment timeout ms,
--         amount (cents), currency
-- ARGV[12] C, how many active orders follow
-- ARGV[13..] C pairs user id, order id of the active orders of this
--         segment's buyers, then pairs user id, order id of the admissions
--         to make again
--
-- Returns {1, admitted again} when the sale was loaded now, {0, 0} when it
-- was already live.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, 0}
end
local active_end = 12 + 2 * tonumber(ARGV[12])
redis.call('DEL', KEYS[4])
for i = 13, active_end, 2 do
  redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
end
if active_end > 12 then
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
local k = {stock = KEYS[1], meta = KEYS[2], outbox = KEYS[3], claims = KEYS[4],
  admitted = KEYS[5], wait = KEYS[6], waited = KEYS[7]}
-- Not marked drawn: some were served by the waitlist, not admitted by the
-- draw; the draw's record names every one of them (GET /draw/orders reads
-- the winners from it).
local t = {sale = ARGV[8], timeout_ms = ARGV[9], amount = ARGV[10], currency = ARGV[11]}
local now = now_ms()
local again = 0
for i = active_end + 1, #ARGV, 2 do
  local user, order = ARGV[i], ARGV[i + 1]
  if redis.call('HEXISTS', k.claims, user) == 0 and tonumber(redis.call('GET', k.stock)) > 0 then
    redis.call('DECR', k.stock)
    admit(k, user, order, now, t, false)
    again = again + 1
  end
end
return {1, again}
