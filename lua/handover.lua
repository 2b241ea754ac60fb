-- handover.lua: give the units in a sale's stock to its waiting buyers,
-- first come, first served, while both last. admit.lua comes first.
--
-- Releases and joins keep units out of the stock while buyers wait; this
-- is the repair for the one way the two can meet anyway (Redis lost and
-- re-loaded the counter while the waitlist survived), run by
-- reconciliation, so a unit is never stuck in the stock while a buyer
-- waits for one.
--
-- KEYS[1] stock, KEYS[2] claims, KEYS[3] meta, KEYS[4] outbox,
-- KEYS[5] admitted, KEYS[6] wait, KEYS[7] waited, KEYS[8] units, KEYS[9] lines,
-- KEYS[10] held (seckill:{sN}:...; stock, wait and held are one variant's)
-- ARGV[1] sale id
-- ARGV[2] payment timeout ms, ARGV[3] price cents per unit, ARGV[4] currency
-- ARGV[5] the variant's sku
-- ARGV[6..] fresh order ids: at most one waiting buyer per id is served
--
-- It takes from the stock only what the first waiting buyers (one per id)
-- lack beyond the units already held for them, so units are not held for
-- buyers no id can serve now; and with nobody waiting the held units go
-- back to the stock (give_units).
--
-- Returns the number of waiting buyers given their units.
local k = {stock = KEYS[1], claims = KEYS[2], meta = KEYS[3], outbox = KEYS[4],
  admitted = KEYS[5], wait = KEYS[6], waited = KEYS[7], units = KEYS[8], lines = KEYS[9], held = KEYS[10]}
local t = {sale = ARGV[1], timeout_ms = ARGV[2], price = ARGV[3], currency = ARGV[4], sku = ARGV[5]}
local orders = {unpack(ARGV, 6)}
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
local need = -tonumber(redis.call('GET', KEYS[10]) or '0')
local served = 0
for _, user in ipairs(redis.call('ZRANGE', KEYS[6], 0, 2 * #orders)) do
  if served >= #orders then
    break
  end
  if not redis.call('HGET', KEYS[2], user) then
    local _, q = line_of(k, user)
    need, served = need + q, served + 1
  end
end
local n = math.max(math.min(stock, need), 0)
redis.call('DECRBY', KEYS[1], n)
local handed = give_units(k, n, now_ms(), t, orders)
return #handed / 3
