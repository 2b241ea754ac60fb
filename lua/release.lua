-- release.lua: the Redis half of compensation for one order, exactly once.
-- admit.lua and move.lua come first.
--
-- The user's claim record is the idempotency key: only while it still names
-- this order is it removed (so the user may claim again) and, when asked,
-- the order's units given back to their variant: to the buyers waiting in
-- the variant's line first (give_units: orders for them, in this same
-- script, so a unit is never also open to a claim), and the rest, with
-- nobody waiting, to the variant's counter for open claims. On a sale
-- of several segments the units are parked instead, as a move not yet
-- aimed, and the caller lands them in the segment whose waiting buyer came
-- first (aim.lua, give.lua). A retry, a second compensation or a claim
-- record lost with Redis finds nothing to do. Units are only given back to
-- a warmed variant: a missing counter is re-warmed from Postgres, which
-- already counts these units, so creating it here would give Redis stock
-- the DB lacks.
--
-- Every release, whatever it finds, marks the order released (KEYS[9]):
-- reconciliation never writes back the claim of an order released before
-- (restore.lua), so a claim restored from a stale read cannot give the
-- units back a second time.
--
-- KEYS[1] stock (the variant's), KEYS[2] claims, KEYS[3] meta, KEYS[4] outbox,
-- KEYS[5] admitted, KEYS[6] wait (the variant's), KEYS[7] waited
-- KEYS[8] moves (the variant's), KEYS[9] released (set of order ids),
-- KEYS[10] units (hash sku -> units the claims hold), KEYS[11] lines (hash
-- user -> "<quantity>:<wait key>" of their line), KEYS[12] held (the
-- variant's units held for its line's head)   (seckill:{sN}:...)
-- ARGV[1] user id
-- ARGV[2] order id
-- ARGV[3] how many of the order's units to give back: its quantity, or
--         fewer (0: only forget the claim) when the database never had
--         them all to give (an order it refused as SOLD_OUT)
-- ARGV[4] pub/sub channel told that the sale has stock again
-- ARGV[5] sale id (the message)
-- ARGV[6] the sale's payment timeout, milliseconds (a waiting buyer's
--         pay_by is now plus it)
-- ARGV[7] the variant's price, cents per unit
-- ARGV[8] currency
-- ARGV[9] the move id parked units get (a sale of several segments)
-- ARGV[10] the order's sku
-- ARGV[11] the order's quantity
-- ARGV[12..] fresh order ids for the waiting buyers the units complete, at
--         most one per unit
--
-- Returns {released, parked, user, order, pay_by, user, order, pay_by, ...}:
-- released 1 when the claim was released now, 0 when there was nothing to
-- do; parked 1 when the units wait as move ARGV[9] for the caller to land;
-- then each waiting buyer who got a unit, with their new order and pay_by.
local expire = redis.call('HGET', KEYS[3], 'expire_ms')
redis.call('SADD', KEYS[9], ARGV[2])
if expire then
  redis.call('PEXPIREAT', KEYS[9], expire)
end
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return {0, 0}
end
local q = tonumber(ARGV[11])
redis.call('HDEL', KEYS[2], ARGV[1])
if redis.call('HINCRBY', KEYS[10], ARGV[10], -q) <= 0 then
  redis.call('HDEL', KEYS[10], ARGV[10])
end
local give = math.min(tonumber(ARGV[3]), q)
if give <= 0 or redis.call('EXISTS', KEYS[1]) == 0 then
  return {1, 0}
end
local segments = tonumber(redis.call('HGET', KEYS[3], 'parts') or '1')
if segments > 1 then
  write_move(KEYS[8], KEYS[3], ARGV[9], {units = give, dest = -1, at = now_ms()})
  return {1, 1}
end
local k = {stock = KEYS[1], claims = KEYS[2], meta = KEYS[3], outbox = KEYS[4],
  admitted = KEYS[5], wait = KEYS[6], waited = KEYS[7], units = KEYS[10], lines = KEYS[11], held = KEYS[12]}
local t = {sale = ARGV[5], timeout_ms = ARGV[6], price = ARGV[7], currency = ARGV[8], sku = ARGV[10]}
local handed, back = give_units(k, give, now_ms(), t, {unpack(ARGV, 12)})
if back > 0 then
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
local out = {1, 0}
for _, v in ipairs(handed) do
  out[#out + 1] = v
end
return out
