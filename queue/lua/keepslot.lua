-- keepslot.lua: the holder of a pass made an order that holds its seats while they pay. Marks the pass
-- spent, and keeps its admission slot as the order's slot until the hold lapses (its score becomes the
-- hold's expiry), so the slot stays taken while the order is held and frees when it is confirmed,
-- cancelled or expires (freeslot.lua, or admit.lua's sweep of lapsed slots).
--
-- KEYS[1] active  ZSET token -> admission expiry (Unix ms)
-- KEYS[2] spent   ZSET pass id -> pass expiry (Unix ms)
-- ARGV[1] token
-- ARGV[2] pass expiry, Unix ms (the admission the pass belongs to)
-- ARGV[3] pass id
-- ARGV[4] the hold's expiry, Unix ms
-- KEYS[3] to KEYS[7] offers, offerable, wlnews, stats, avail: the waitlist's (offertaken.lua)
-- ARGV[5] how many seats the order took
--
-- Returns 1 when the slot now lasts until the hold's expiry, 0 when it was already gone.
takeOffer(3, ARGV[1], ARGV[2], ARGV[5]) -- an order made with a waitlist's offer takes it (offertaken.lua)
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if held and tonumber(held) == tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[4], ARGV[1])
  return 1
end
return 0
