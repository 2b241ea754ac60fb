-- now.lua: Redis' clock, read on the server that holds the sale: the clock
-- every script of the sale decides by. clock.lua comes first.
--
-- KEYS[1] a key of the sale (seckill:{sN}:meta; not read): on a Cluster it
--         sends the script to the sale's shard
--
-- Returns the time, unix milliseconds.
return now_ms()
