-- leave.lua: a token leaves the screening: out of the line if waiting, and its admission slot freed if admitted.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] active   ZSET token -> admission expiry (Unix ms)
-- ARGV[1] token
--
-- Returns {removedFromWaiting (0|1), removedFromActive (0|1)}
return {redis.call('ZREM', KEYS[1], ARGV[1]), redis.call('ZREM', KEYS[2], ARGV[1])}
