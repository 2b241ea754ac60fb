-- rewarm.lua: load a segment of a sale whose keys Redis lost, from the
-- database's snapshot, unless its counters are live again. Like warm.lua,
-- but it also restores the claims of the orders still active (with the
-- units each holds), so one buyer still gets one active order, and admits
-- again, each with its order and its units, the admissions Redis lost
-- before their orders were written (a drawn sale's winners: the draw told
-- them their order), in the same step, so no claim can take their units
-- first.
--
-- KEYS[1] meta     seckill:{sN}:meta
-- KEYS[2] outbox   seckill:{sN}:outbox
-- KEYS[3] claims   seckill:{sN}:claims
-- KEYS[4] admitted seckill:{sN}:admitted
-- KEYS[5] waited   seckill:{sN}:waited
-- KEYS[6] units    seckill:{sN}:units
-- KEYS[7] lines    seckill:{sN}:lines
-- KEYS[8..] for each variant, the sale's first first: its stock, then its
--          wait (seckill:{sN}:stock[:<sku>], seckill:{sN}:wait[:<sku>])
-- ARGV[1] starts_ms
-- ARGV[2] ends_ms
-- ARGV[3] expire_ms
-- ARGV[4] consumer group of the outbox relay
-- ARGV[5] how many segments the sale's stock has (this is one of them)
-- ARGV[6] the highest join sequence any live segment's waitlist holds (segment 0
--         numbers the joins of a sale of several segments: a re-loaded segment 0
--         goes on after it, so the line keeps its order)
-- ARGV[7] sale id, ARGV[8] payment timeout ms, ARGV[9] currency
-- ARGV[10] presale_ms ('' for a sale without a presale), as warm.lua's
-- ARGV[11] V, the variants; then V triples in KEYS' order: sku, units to
--         load (the database's available minus the orders written but not
--         yet holding their units, the admissions to make again included),
--         price cents per unit
-- then C, how many active orders follow, and C quadruples user id, order
--         id, sku, quantity of the active orders of this segment's buyers;
--         then quadruples user id, order id, sku, quantity of the
--         admissions to make again
--
-- meta's skus is written as warm.lua writes it.
--
-- Returns {1, admitted again} when the segment was loaded now, {0, 0} when
-- it was already live.
if redis.call('EXISTS', KEYS[8]) == 1 then
  return {0, 0}
end
local expire = ARGV[3]
local v = tonumber(ARGV[11])
local variants, skus = {}, {}
for i = 0, v - 1 do
  local a = 12 + 3 * i
  variants[ARGV[a]] = {stock = KEYS[8 + 2 * i], wait = KEYS[9 + 2 * i], units = ARGV[a + 1], price = ARGV[a + 2]}
  skus[#skus + 1] = ARGV[a]
end
local c_at = 12 + 3 * v
local active_end = c_at + 4 * tonumber(ARGV[c_at])
redis.call('DEL', KEYS[3], KEYS[6])
for i = c_at + 1, active_end, 4 do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
  redis.call('HINCRBY', KEYS[6], ARGV[i + 2], tonumber(ARGV[i + 3]))
end
if active_end > c_at then
  redis.call('PEXPIREAT', KEYS[3], expire)
  redis.call('PEXPIREAT', KEYS[6], expire)
end
redis.call('HSET', KEYS[1], 'starts_ms', ARGV[1], 'ends_ms', ARGV[2], 'expire_ms', expire, 'parts', ARGV[5],
  'skus', table.concat(skus, ','))
if tonumber(ARGV[6]) > 0 then
  redis.call('HSET', KEYS[1], 'wait_seq', ARGV[6])
end
if ARGV[10] ~= '' then
  redis.call('HSET', KEYS[1], 'presale_ms', ARGV[10])
end
redis.call('PEXPIREAT', KEYS[1], expire)
for _, var in pairs(variants) do
  redis.call('SET', var.stock, var.units, 'PXAT', expire)
end
pcall(redis.call, 'XGROUP', 'CREATE', KEYS[2], ARGV[4], '0', 'MKSTREAM')
redis.call('PEXPIREAT', KEYS[2], expire)
-- Not marked drawn: some were served by the waitlist, not admitted by the
-- draw; the draw's record names every one of them (GET /draw/orders reads
-- the winners from it).
local now = now_ms()
local again = 0
for i = active_end + 1, #ARGV, 4 do
  local user, order, sku, q = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  local var = variants[sku]
  if var and redis.call('HEXISTS', KEYS[3], user) == 0 and tonumber(redis.call('GET', var.stock)) >= q then
    redis.call('DECRBY', var.stock, q)
    local k = {stock = var.stock, meta = KEYS[1], outbox = KEYS[2], claims = KEYS[3],
      admitted = KEYS[4], wait = var.wait, waited = KEYS[5], units = KEYS[6], lines = KEYS[7]}
    admit(k, user, order, now, {sale = ARGV[7], timeout_ms = ARGV[8], price = var.price, currency = ARGV[9], sku = sku, q = q}, false)
    again = again + 1
  end
end
return {1, again}
