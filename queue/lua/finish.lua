-- finish.lua: the holder of a pass has reserved. Marks the pass spent and frees the admission slot at once,
-- so the next tick can admit someone in its place (instead of holding the slot until active_ttl).
--
-- KEYS[1] active  ZSET token -> admission expiry (Unix ms)
-- KEYS[2] spent   ZSET pass id -> pass expiry (Unix ms)
-- KEYS[3] freed   STRING slots freed since the last admission (a refill admits that many)
-- ARGV[1] token
-- ARGV[2] pass expiry, Unix ms (the admission the pass belongs to)
-- ARGV[3] pass id
-- KEYS[4] to KEYS[8] offers, offerable, wlnews, stats, avail: the waitlist's (offertaken.lua)
-- ARGV[4] how many seats the order took
--
-- Returns 1 when the slot was freed, 0 when it was already gone.
takeOffer(4, ARGV[1], ARGV[2], ARGV[4]) -- an order made with a waitlist's offer takes it (offertaken.lua)
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if held and tonumber(held) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('INCR', KEYS[3])
  return 1
end
return 0
