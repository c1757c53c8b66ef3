-- finish.lua: the holder of a pass has reserved. Marks the pass spent and frees the admission slot at once,
-- so the next tick can admit someone in its place (instead of holding the slot until active_ttl).
--
-- KEYS[1] active  ZSET token -> admission expiry (Unix ms)
-- KEYS[2] spent   ZSET pass id -> pass expiry (Unix ms)
-- KEYS[3] freed   STRING slots freed since the last admission (a refill admits that many)
-- ARGV[1] token
-- ARGV[2] pass expiry, Unix ms (the admission the pass belongs to)
-- ARGV[3] pass id
-- KEYS[4] offers    HASH token -> seats offered (admit.lua's waitlist); KEYS[5] offerable, KEYS[6] wlnews,
-- KEYS[7] stats: when given, an offer taken is recorded
-- KEYS[8] avail: the seats available as last counted, less those the order took
-- ARGV[4] how many seats the order took
--
-- Returns 1 when the slot was freed, 0 when it was already gone.
-- An offer taken (admit.lua's waitlist): the seats it did not use go back to the next offer round.
if KEYS[4] then
  local offered = redis.call('HGET', KEYS[4], ARGV[1])
  if offered then
    redis.call('HDEL', KEYS[4], ARGV[1])
    local back = tonumber(offered) - tonumber(ARGV[4])
    if back > 0 then
      redis.call('INCRBY', KEYS[5], back)
    end
    redis.call('HINCRBY', KEYS[7], 'offers_taken', 1)
    if KEYS[8] and redis.call('EXISTS', KEYS[8]) == 1 then
      -- The seats the order took are no longer available (reopen.lua counted them).
      if redis.call('DECRBY', KEYS[8], ARGV[4]) < 0 then
        redis.call('SET', KEYS[8], '0')
      end
    end
    redis.call('RPUSH', KEYS[6], 'taken ' .. ARGV[1] .. ' ' .. offered .. ' ' .. ARGV[2] .. ' ' .. ARGV[4])
  end
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if held and tonumber(held) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('INCR', KEYS[3])
  return 1
end
return 0
