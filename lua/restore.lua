-- restore.lua: write back the claim of an order still active in the
-- database whose claim Redis lost (reconciliation), one buyer one active
-- order. Re-read here, not trusted from the caller's earlier read: an
-- order released meanwhile (release.lua marked it) is not restored, and a
-- claim the user holds now is never overwritten.
--
-- KEYS[1] claims    seckill:{sN}:claims
-- KEYS[2] released  seckill:{sN}:released
-- KEYS[3] meta      seckill:{sN}:meta
-- KEYS[4] units     seckill:{sN}:units (hash sku -> units the claims hold)
-- ARGV[1] user id
-- ARGV[2] order id
-- ARGV[3] the order's sku, ARGV[4] its quantity
--
-- Returns 1 when the claim was written, 0 when the user holds one, -1
-- when the order was released.
if redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 1 then
  return -1
end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[4], ARGV[3], tonumber(ARGV[4]))
local expire = redis.call('HGET', KEYS[3], 'expire_ms')
if expire then
  redis.call('PEXPIREAT', KEYS[1], expire)
  redis.call('PEXPIREAT', KEYS[4], expire)
end
return 1
