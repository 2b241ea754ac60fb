-- restock.lua: the Redis half of a restock (docs/API.md "Restocking"),
-- run on segment 0 of the sale. admit.lua and move.lua come first.
--
-- The database half has added the units to the variant already; this
-- places them, once, as release.lua places units that come back: to the
-- buyers waiting in the variant's line (give_units: orders for them, in
-- this same script, so a unit is never also open to a claim, and units
-- held for a head who waits for more), and, once nobody waits, the rest
-- to the variant's stock for open claims.
-- On a sale of several segments the units owed to the buyers waiting in
-- the other segments are parked here as moves aimed at those segments
-- (the caller has read who waits where, first come first served across
-- the segments, and lands each move with give.lua); the rest are placed
-- in this segment.
--
-- Idempotent per restock: KEYS[9] counts the units of each restock placed
-- so far, and a repeat places only what is left (nothing once all are).
-- One call serves at most the buyers the caller planned for (so one
-- script stays short however long the line): while buyers wait beyond
-- its plan, it places only what the plan covers and answers 2, and the
-- caller calls again with the next plan.
--
-- Units are only placed in a warmed variant: a missing counter is loaded
-- again from Postgres by re-warm, which leaves out of what it loads the
-- units of the restocks not applied that KEYS[9] does not show placed
-- (store.WarmSnapshot, redisstore.RewarmAdmitting), so this script is run
-- again after it and adds them then; a re-warm of segment 0 that counted
-- a restock whole records it placed here.
--
-- KEYS[1] stock (the variant's), KEYS[2] claims, KEYS[3] meta,
-- KEYS[4] outbox, KEYS[5] admitted, KEYS[6] wait (the variant's),
-- KEYS[7] waited, KEYS[8] moves (the variant's), KEYS[9] restocks (hash
-- restock id -> units placed), KEYS[10] units (hash sku -> units the
-- claims hold), KEYS[11] lines (hash user -> "<quantity>:<wait key>"),
-- KEYS[12] held (the variant's units held for its line's head)
-- (seckill:{sN}:..., segment 0)
-- ARGV[1] restock id
-- ARGV[2] the units the restock adds
-- ARGV[3] the units placed so far as the caller read them (KEYS[9]) to
--         plan this call: the move ids are named after it, so a plan made
--         from a count that has moved since is refused, and no move id is
--         ever parked twice
-- ARGV[4] pub/sub channel told that the sale has stock again
-- ARGV[5] sale id (the message)
-- ARGV[6] the sale's payment timeout ms, ARGV[7] the variant's price
--         cents per unit, ARGV[8] currency
-- ARGV[9] the variant's sku
-- ARGV[10] the units the plan gives this segment's waiting buyers (the
--         outstanding quantity of each it covers), or -1 when the plan
--         covers every buyer waiting for the variant (every unit left is
--         placed here: to its buyers, and the rest to the stock)
-- ARGV[11] M, the moves to park; then M triples: move id, the segment it
--         goes to, its units (the outstanding quantities of the buyers
--         planned there)
-- then fresh order ids for this segment's waiting buyers, one per buyer
--
-- Returns {0} when every unit was placed before (nothing happens again),
-- {3} when the variant is not warmed here (nothing happens), {4} when
-- another call placed units since the caller read ARGV[3] (nothing
-- happens: plan again), else {done,
-- parked, user, order, pay_by, user, order, pay_by, ...}: done 1 when
-- every unit is placed now, 2 when some are left for the next call;
-- parked the units parked as moves; then each waiting buyer of this
-- segment who got a unit, with their new order and pay_by.
local add = tonumber(ARGV[2])
local placed = tonumber(redis.call('HGET', KEYS[9], ARGV[1]) or '0')
if placed >= add then
  return {0}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {3}
end
if placed ~= tonumber(ARGV[3]) then
  return {4}
end
local left = add - placed
local m = tonumber(ARGV[11])
local parked = 0
for i = 0, m - 1 do
  parked = parked + tonumber(ARGV[14 + 3 * i])
end
if parked > left then
  return redis.error_reply('restock: the moves hold more units than are left to place')
end
local now = now_ms()
for i = 0, m - 1 do
  local a = 12 + 3 * i
  write_move(KEYS[8], KEYS[3], ARGV[a], {units = tonumber(ARGV[a + 2]), dest = tonumber(ARGV[a + 1]), at = now})
end
left = left - parked
local k = {stock = KEYS[1], claims = KEYS[2], meta = KEYS[3], outbox = KEYS[4],
  admitted = KEYS[5], wait = KEYS[6], waited = KEYS[7], units = KEYS[10], lines = KEYS[11], held = KEYS[12]}
local t = {sale = ARGV[5], timeout_ms = ARGV[6], price = ARGV[7], currency = ARGV[8], sku = ARGV[9]}
local out = {1, parked}
-- The units are placed (give_units): to this segment's waiting buyers
-- (one order id each), held for its head, or, with nobody waiting, to the
-- stock. All that are left when the plan covers every waiting buyer; else
-- the units it planned here, and the next call plans the rest.
local ids = {unpack(ARGV, 12 + 3 * m)}
local give = left
if tonumber(ARGV[10]) >= 0 then
  give = math.min(left, tonumber(ARGV[10]))
end
local handed, back = give_units(k, give, now, t, ids)
for _, v in ipairs(handed) do
  out[#out + 1] = v
end
if back > 0 then
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
left = left - give
if left > 0 then
  out[1] = 2
end
redis.call('HSET', KEYS[9], ARGV[1], add - left)
local expire = redis.call('HGET', KEYS[3], 'expire_ms')
if expire then
  redis.call('PEXPIREAT', KEYS[9], expire)
end
return out
