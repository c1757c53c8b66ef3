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
-- KEYS[3] offers    HASH token -> seats offered (admit.lua's waitlist); KEYS[4] offerable, KEYS[5] wlnews,
-- KEYS[6] stats: when given, an offer taken is recorded
-- KEYS[7] avail: the seats available as last counted, less those the order took
-- ARGV[5] how many seats the order took
--
-- Returns 1 when the slot now lasts until the hold's expiry, 0 when it was already gone.
-- An offer taken (admit.lua's waitlist): the seats it did not use go back to the next offer round.
if KEYS[3] then
  local offered = redis.call('HGET', KEYS[3], ARGV[1])
  if offered then
    redis.call('HDEL', KEYS[3], ARGV[1])
    local back = tonumber(offered) - tonumber(ARGV[5])
    if back > 0 then
      redis.call('INCRBY', KEYS[4], back)
    end
    redis.call('HINCRBY', KEYS[6], 'offers_taken', 1)
    if KEYS[7] and redis.call('EXISTS', KEYS[7]) == 1 then
      -- The seats the order took are no longer available (reopen.lua counted them).
      if redis.call('DECRBY', KEYS[7], ARGV[5]) < 0 then
        redis.call('SET', KEYS[7], '0')
      end
    end
    redis.call('RPUSH', KEYS[5], 'taken ' .. ARGV[1] .. ' ' .. offered .. ' ' .. ARGV[2] .. ' ' .. ARGV[5])
  end
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if held and tonumber(held) == tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[4], ARGV[1])
  return 1
end
return 0
