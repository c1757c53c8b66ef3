-- register.lua: put a token in a screening's line once (ZADD NX semantics), or report where it already is.
-- A first registration takes the next number of the screening's dense sequence, so re-registering never
-- burns a number and the line is strictly first come, first served.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] active   ZSET token -> admission expiry (Unix ms)
-- KEYS[3] seq      STRING the last sequence number handed out
-- KEYS[4] closed   STRING present once the screening is sold out
-- KEYS[5] changed  STRING set when the line changed since the last tick (the next tick pushes positions)
-- KEYS[6] epoch    STRING the number of the last admission event (admit.lua)
-- ARGV[1] token
-- ARGV[2] now, Unix ms
--
-- Returns one of
--   {"closed"}
--   {"admitted", expiresAtMs}
--   {"waiting", zeroBasedRank, total, inserted (0|1), seq, epoch}
-- where epoch lets the caller tell whether an event came between this answer and its socket joining the hub.
local token = ARGV[1]
local now = tonumber(ARGV[2])

if redis.call('EXISTS', KEYS[4]) == 1 then
  return {'closed'}
end

local expires = redis.call('ZSCORE', KEYS[2], token)
if expires then
  if tonumber(expires) > now then
    return {'admitted', expires}
  end
  -- The admission lapsed unused: the slot is already free by time; the holder queues again at the end.
  redis.call('ZREM', KEYS[2], token)
end

local inserted = 0
if not redis.call('ZSCORE', KEYS[1], token) then
  local seq = redis.call('INCR', KEYS[3])
  redis.call('ZADD', KEYS[1], 'NX', seq, token)
  redis.call('SET', KEYS[5], '1')
  inserted = 1
end
return {'waiting', redis.call('ZRANK', KEYS[1], token), redis.call('ZCARD', KEYS[1]), inserted,
  tonumber(redis.call('ZSCORE', KEYS[1], token)), tonumber(redis.call('GET', KEYS[6]) or '0')}
