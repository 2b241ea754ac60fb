-- useproof.lua: record the use of a proof of work, once, atomically
-- (redisstore.UseProof).
--
-- A request takes a proof by writing its mark: "1", or "h:<hex digest of
-- its retry tag>" (hex, so never ending in "*") for a claim under an
-- Idempotency-Key, whose copies sent again may use the same proof (they
-- get the first answer). A copy that uses it so turns the mark into
-- "<mark>*": the proof then bought (or may buy) a decision, and the
-- taker's give-back (unlock.lua, which deletes only its own mark) leaves
-- it spent.
--
-- KEYS[1] the proof's record   seckill:{sN}:pow:<challenge prefix>
-- ARGV[1] this request's mark
-- ARGV[2] when the record expires, unix ms
--
-- Returns 1 taken now, 2 used again under the same retry tag, 0 used by
-- another request.
local prev = redis.call('GET', KEYS[1])
if not prev then
  redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
  return 1
end
if ARGV[1] ~= '1' and (prev == ARGV[1] or prev == ARGV[1] .. '*') then
  if prev == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1] .. '*', 'KEEPTTL')
  end
  return 2
end
return 0
