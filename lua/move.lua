-- move.lua: a move's record, read and written the same way by every
-- script that touches one (take.lua, aim.lua, forget.lua, release.lua,
-- give.lua, restock.lua).
-- lua.go puts this file in front of them.
--
-- Units that leave one segment of a sale for another are recorded in the
-- moves hash of the segment they left (seckill:{sN.p}:moves), move id ->
-- JSON {"units": n, "dest": segment, "at": ms}: dest is -1 until the move is
-- aimed (a released unit parked by release.lua), at is when the units
-- left, on Redis' clock. docs/DESIGN.md draws a move's states.

-- read_move decodes a record. A record written before records were JSON
-- ("<units>:<dest>:<ms>", dest '' when not aimed) reads the same.
local function read_move(v)
  if string.sub(v, 1, 1) == '{' then
    local m = cjson.decode(v)
    return {units = tonumber(m.units), dest = tonumber(m.dest), at = tonumber(m.at)}
  end
  local a = string.find(v, ':', 1, true)
  local b = string.find(v, ':', a + 1, true)
  local dest = string.sub(v, a + 1, b - 1)
  if dest == '' then
    dest = '-1'
  end
  return {units = tonumber(string.sub(v, 1, a - 1)), dest = tonumber(dest), at = tonumber(string.sub(v, b + 1))}
end

-- write_move records move id of m in the moves hash moves, which expires
-- with the sale (meta's expire_ms).
local function write_move(moves, meta, id, m)
  redis.call('HSET', moves, id, cjson.encode({units = m.units, dest = m.dest, at = m.at}))
  local expire = redis.call('HGET', meta, 'expire_ms')
  if expire then
    redis.call('PEXPIREAT', moves, expire)
  end
end
