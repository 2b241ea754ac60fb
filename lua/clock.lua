-- clock.lua: put in front of every script that reads the time.

-- now_ms is the Redis server's clock in milliseconds: the one clock of
-- every API node and worker.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
