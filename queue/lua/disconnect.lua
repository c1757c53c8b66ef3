-- disconnect.lua: one socket of a token closed. When it was the token's last open socket and the token is
-- still waiting (in line or in the pre-queue), note when it went: a token gone longer than the grace is
-- abandoned at the next tick (admit.lua) or at opening (open.lua), so no admission is spent on it. A
-- reconnect within the grace (register.lua) forgets the note.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] pre      ZSET token -> random shuffle key
-- KEYS[3] gone     ZSET token -> when its last socket closed (Unix ms)
-- KEYS[4] conns    HASH token -> open sockets
-- ARGV[1] token
-- ARGV[2] now, Unix ms
--
-- Returns 1 when the token is now counted gone, else 0.
local token = ARGV[1]
if redis.call('HINCRBY', KEYS[4], token, -1) > 0 then
  return 0
end
redis.call('HDEL', KEYS[4], token)
if redis.call('ZSCORE', KEYS[1], token) or redis.call('ZSCORE', KEYS[2], token) then
  redis.call('ZADD', KEYS[3], ARGV[2], token)
  return 1
end
return 0
