-- unlock.lua: give up a lock (a key SET NX with a token) only while it is
-- still the caller's: one that expired and was taken by another is left.
-- (Also gives back a proof of work's record, redisstore.GiveProofBack.)
--
-- KEYS[1] the lock
-- ARGV[1] the caller's token
--
-- Returns 1 when the lock was released now.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
