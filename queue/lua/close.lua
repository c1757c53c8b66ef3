-- close.lua: the screening is sold out. Closes registration and disperses the waiting line in one step, so
-- nobody can join a line that will never move.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] closed   STRING present once the screening is sold out
-- KEYS[3] pre      ZSET token -> random shuffle key, before the line opens
-- KEYS[4] gone     ZSET token -> when its last socket closed
-- KEYS[5] conns    HASH token -> open sockets
--
-- Returns the number of tokens that were waiting (in line or in the pre-queue).
local n = redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[3])
redis.call('SET', KEYS[2], '1')
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4], KEYS[5])
return n
