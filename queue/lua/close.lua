-- close.lua: the screening is sold out. Closes registration and disperses the waiting line in one step, so
-- nobody can join a line that will never move.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] closed   STRING present once the screening is sold out
--
-- Returns the number of tokens that were waiting.
local n = redis.call('ZCARD', KEYS[1])
redis.call('SET', KEYS[2], '1')
redis.call('DEL', KEYS[1])
return n
