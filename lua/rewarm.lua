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
-- KEYS[8..] for each variant, the sale's first first: its stock, its
--          wait and its held (seckill:{sN}:stock[:<sku>],
--          seckill:{sN}:wait[:<sku>], seckill:{sN}:held[:<sku>])
-- KEYS[8+3V] restocks (hash restock id -> units placed; restock.lua's,
--          segment 0's: the others' is never written)
-- ARGV[1] starts_ms
-- ARGV[2] ends_ms
-- ARGV[3] expire_ms
-- ARGV[4] consumer group of the outbox relay
-- ARGV[5] how many segments the sale's stock has (this is one of them)
-- ARGV[6] the highest join sequence given before: any live segment's waitlist's,
--         any place put back, and the highest place the database recorded,
--         of rows served or left since too (segment 0 numbers the joins of a
--         sale of several segments: a re-loaded segment 0 goes on after it,
--         so the line keeps its order and no place is given twice)
-- ARGV[7] sale id, ARGV[8] payment timeout ms, ARGV[9] currency
-- ARGV[10] presale_ms ('' for a sale without a presale), as warm.lua's
-- ARGV[11] V, the variants; then V triples in KEYS' order: sku, units to
--         load (the database's available minus the orders written but not
--         yet holding their units, the admissions to make again included),
--         price cents per unit
-- then R, the restocks this load counts whole (segment 0 only: the
--         database's restocks not marked applied, whose record of what
--         Redis placed went with the segment), and R pairs restock id,
--         units: written to KEYS[8+3V] as placed, so their Redis half
--         places nothing again
-- then C, how many active orders follow, and C quadruples user id, order
--         id, sku, quantity of the active orders of this segment's buyers;
--         then A and A quadruples user id, order id, sku, quantity of the
--         admissions to make again; then quintuples user id, order id, sku,
--         quantity, place of the buyers to put back in line (the durable
--         waitlist, docs/DESIGN.md invariant 10), in join order
--
-- meta's skus is written as warm.lua writes it.
--
-- Once the claims and the admissions are back, each variant's line is
-- rebuilt from the buyers to put back (one whose claim is back, or who is
-- in a line already, is skipped), each at their place, and the variant's
-- stock is given to it as units that came back are (give_units): its head
-- is served with the order id their row carries once the units cover
-- their quantity, and units too few for the head are held for them.
--
-- Returns {1, admitted again, put back in line, served from the line} when
-- the segment was loaded now, {0, 0, 0, 0} when it was already live.
if redis.call('EXISTS', KEYS[8]) == 1 then
  return {0, 0, 0, 0}
end
local expire = ARGV[3]
local v = tonumber(ARGV[11])
local variants, skus = {}, {}
for i = 0, v - 1 do
  local a = 12 + 3 * i
  variants[ARGV[a]] = {stock = KEYS[8 + 3 * i], wait = KEYS[9 + 3 * i], held = KEYS[10 + 3 * i],
    units = ARGV[a + 1], price = ARGV[a + 2], sku = ARGV[a], orders = {}}
  skus[#skus + 1] = ARGV[a]
end
local r_at = 12 + 3 * v
local c_at = r_at + 1 + 2 * tonumber(ARGV[r_at])
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
if c_at > r_at + 1 then
  for i = r_at + 1, c_at - 1, 2 do
    redis.call('HSET', KEYS[8 + 3 * v], ARGV[i], ARGV[i + 1])
  end
  redis.call('PEXPIREAT', KEYS[8 + 3 * v], expire)
end
pcall(redis.call, 'XGROUP', 'CREATE', KEYS[2], ARGV[4], '0', 'MKSTREAM')
redis.call('PEXPIREAT', KEYS[2], expire)
-- Not marked drawn: some were served by the waitlist, not admitted by the
-- draw; the draw's record names every one of them (GET /draw/orders reads
-- the winners from it).
local now = now_ms()
local function keys_of(var)
  return {stock = var.stock, meta = KEYS[1], outbox = KEYS[2], claims = KEYS[3],
    admitted = KEYS[4], wait = var.wait, waited = KEYS[5], units = KEYS[6], lines = KEYS[7], held = var.held}
end
local again = 0
local again_end = active_end + 1 + 4 * tonumber(ARGV[active_end + 1])
for i = active_end + 2, again_end, 4 do
  local user, order, sku, q = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  local var = variants[sku]
  if var and redis.call('HEXISTS', KEYS[3], user) == 0 and tonumber(redis.call('GET', var.stock)) >= q then
    redis.call('DECRBY', var.stock, q)
    admit(keys_of(var), user, order, now, {sale = ARGV[7], timeout_ms = ARGV[8], price = var.price, currency = ARGV[9], sku = sku, q = q}, false)
    again = again + 1
  end
end
-- The lines, as join.lua writes them.
local back = 0
for i = again_end + 1, #ARGV, 5 do
  local user, order, sku, q, place = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3]), ARGV[i + 4]
  local var = variants[sku]
  if var and redis.call('HEXISTS', KEYS[3], user) == 0 and redis.call('HEXISTS', KEYS[7], user) == 0 then
    redis.call('ZADD', var.wait, place, user)
    redis.call('HSET', KEYS[7], user, q .. ':' .. var.wait)
    redis.call('PEXPIREAT', var.wait, expire)
    redis.call('PEXPIREAT', KEYS[7], expire)
    var.orders[#var.orders + 1] = order
    back = back + 1
  end
end
-- Each line's units, first come first served: the heads were put back
-- in join order, so the n-th buyer served is the n-th put back and gets
-- the order id their own row carries.
local served = 0
for _, var in pairs(variants) do
  local units = tonumber(redis.call('GET', var.stock))
  if #var.orders > 0 and units > 0 then
    redis.call('DECRBY', var.stock, units)
    local out = give_units(keys_of(var), units, now,
      {sale = ARGV[7], timeout_ms = ARGV[8], price = var.price, currency = ARGV[9], sku = var.sku}, var.orders)
    served = served + #out / 3
  end
end
return {1, again, back, served}
