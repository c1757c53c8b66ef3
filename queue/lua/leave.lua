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
-- KEYS[9] log      STREAM the admission log's records on their way to the database (docs/admission-log.md)
-- KEYS[10] preinfo HASH token -> "entry time hash" (register.lua)
-- ARGV[1] token
-- ARGV[2] now, Unix ms
-- ARGV[3] '1' when the admission log is kept: the place or the pre-queue entry given up is logged
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
  if ARGV[3] == '1' then
    redis.call('XADD', KEYS[9], '*', 'r', 'gone t=' .. ARGV[2] .. ' seq=' .. seq .. ' why=left')
  end
end
if redis.call('ZREM', KEYS[7], ARGV[1]) == 1 then
  waiting = 1 -- out of the pre-queue: it has no number yet, so no rank moves
  local info = ARGV[3] == '1' and redis.call('HGET', KEYS[10], ARGV[1])
  if info then
    redis.call('HDEL', KEYS[10], ARGV[1])
    redis.call('XADD', KEYS[9], '*', 'r', 'pre-gone t=' .. ARGV[2] .. ' n=' .. string.match(info, '^(%d+)') .. ' why=left')
  end
end
redis.call('ZREM', KEYS[8], ARGV[1])
local active = redis.call('ZREM', KEYS[2], ARGV[1])
if active == 1 then
  redis.call('INCR', KEYS[4])
end
return {waiting, active}
