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
-- KEYS[5] admitted, KEYS[6] wait, KEYS[7] waited, KEYS[8] units, KEYS[9] lines
-- (seckill:{sN}:...; stock and wait are one variant's)
-- ARGV[1] sale id
-- ARGV[2] payment timeout ms, ARGV[3] price cents per unit, ARGV[4] currency
-- ARGV[5] the variant's sku
-- ARGV[6..] fresh order ids: at most one unit per id is handed over
--
-- Returns the number of units handed to waiting buyers.
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
local k = {stock = KEYS[1], claims = KEYS[2], meta = KEYS[3], outbox = KEYS[4],
  admitted = KEYS[5], wait = KEYS[6], waited = KEYS[7], units = KEYS[8], lines = KEYS[9]}
local t = {sale = ARGV[1], timeout_ms = ARGV[2], price = ARGV[3], currency = ARGV[4], sku = ARGV[5], q = 1}
local now = now_ms()
local handed = 0
for i = 6, #ARGV do
  if stock <= 0 or not hand_over(k, ARGV[i], now, t) then
    break
  end
  redis.call('DECR', KEYS[1])
  stock = stock - 1
  handed = handed + 1
end
return handed
