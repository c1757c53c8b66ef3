-- freeslot.lua: a held order ended (confirmed, cancelled or expired): its order slot, kept until the hold's
-- expiry by keepslot.lua, is freed at once for the next admission.
--
-- KEYS[1] active  ZSET token -> slot expiry (Unix ms)
-- KEYS[2] freed   STRING slots freed since the last admission (a refill admits that many)
-- ARGV[1] token
-- ARGV[2] the hold's expiry, Unix ms (the slot keepslot.lua kept)
--
-- Returns 1 when the slot was freed, 0 when it was already gone (lapsed, or the token was admitted again).
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if held and tonumber(held) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('INCR', KEYS[2])
  return 1
end
return 0
