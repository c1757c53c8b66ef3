-- leave.lua: a token leaves the screening: out of the line if waiting, and its admission slot freed if admitted.
-- A leave from the line is recorded by sequence number (in `left` for a rank computed at any moment, and in
-- `leftnew` for the next admission's event), so every instance can compute ranks without asking Redis.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] active   ZSET token -> admission expiry (Unix ms)
-- KEYS[3] changed  STRING set when the line changed since the last tick (the next tick pushes positions)
-- KEYS[4] freed    STRING slots freed since the last admission (a refill admits that many)
-- KEYS[5] left     ZSET seq -> seq: sequence numbers that left the line, above the head
-- KEYS[6] leftnew  LIST sequence numbers that left since the last published admission
-- KEYS[7] pre      ZSET token -> random shuffle key, before the line opens
-- KEYS[8] gone     ZSET token -> when its last socket closed
-- ARGV[1] token
--
-- Returns {removedFromWaiting (0|1), removedFromActive (0|1)}
local waiting = 0
local seq = redis.call('ZSCORE', KEYS[1], ARGV[1])
if seq then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[5], seq, seq)
  redis.call('RPUSH', KEYS[6], seq)
  redis.call('SET', KEYS[3], '1')
  waiting = 1
end
if redis.call('ZREM', KEYS[7], ARGV[1]) == 1 then
  waiting = 1 -- out of the pre-queue: it has no number yet, so no rank moves
end
redis.call('ZREM', KEYS[8], ARGV[1])
local active = redis.call('ZREM', KEYS[2], ARGV[1])
if active == 1 then
  redis.call('INCR', KEYS[4])
end
return {waiting, active}
