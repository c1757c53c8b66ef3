-- disconnect.lua: one socket of a token closed. When it was the token's last open socket and the token is
-- still waiting (in line or in the pre-queue), note when it went: a token gone longer than the grace is
-- abandoned at the next tick (admit.lua) or at opening (open.lua), so no admission is spent on it. A
-- reconnect within the grace (register.lua) forgets the note.
--
-- Each count-off carries a key of its own (KEYS[5], named after a random id the caller drew), set here the
-- first time: a count-off sent again because its first reply was lost (queue/batch.go) finds it and changes
-- nothing, so counting off twice can never drop a token that still has another socket open.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] pre      ZSET token -> random shuffle key
-- KEYS[3] gone     ZSET token -> when its last socket closed (Unix ms)
-- KEYS[4] conns    HASH token -> open sockets
-- KEYS[5] off      STRING this count-off's mark, present once it ran
-- KEYS[6] (only to undo a registration whose caller got no answer: Queue.Undo) the registration's mark
-- (register.lua): present if it ran, and then its socket is counted off; absent if it did not, and then it
-- is set so that the registration, should it still arrive, does nothing, and nothing is counted off here
-- ARGV[1] token
-- ARGV[2] now, Unix ms
-- ARGV[3] how long the marks are kept, ms (longer than the count-off is tried for)
--
-- Returns 1 when the token is now counted gone, else 0 (also when this count-off had already run, or undid
-- a registration that had not).
local token = ARGV[1]
if not redis.call('SET', KEYS[5], '1', 'NX', 'PX', ARGV[3]) then
  return 0
end
if KEYS[6] and redis.call('SET', KEYS[6], '1', 'NX', 'PX', ARGV[3]) then
  return 0
end
if redis.call('HINCRBY', KEYS[4], token, -1) > 0 then
  return 0
end
redis.call('HDEL', KEYS[4], token)
if redis.call('ZSCORE', KEYS[1], token) or redis.call('ZSCORE', KEYS[2], token) then
  redis.call('ZADD', KEYS[3], ARGV[2], token)
  return 1
end
return 0
