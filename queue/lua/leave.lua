-- leave.lua: a token leaves the screening: out of the line if waiting, and its admission slot freed if admitted.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] active   ZSET token -> admission expiry (Unix ms)
-- KEYS[3] changed  STRING set when the line changed since the last tick (the next tick pushes positions)
-- KEYS[4] freed    STRING slots freed since the last admission (a refill admits that many)
-- ARGV[1] token
--
-- Returns {removedFromWaiting (0|1), removedFromActive (0|1)}
local waiting = redis.call('ZREM', KEYS[1], ARGV[1])
if waiting == 1 then
  redis.call('SET', KEYS[3], '1')
end
local active = redis.call('ZREM', KEYS[2], ARGV[1])
if active == 1 then
  redis.call('INCR', KEYS[4])
end
return {waiting, active}
