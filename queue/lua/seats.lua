-- seats.lua: an order's seats changed state after its transaction committed. The sold set holds every seat
-- not available, the held set those only held while their buyer pays.
--
-- KEYS[1] sold      SET of the screening's taken seat ids
-- KEYS[2] held      SET of the screening's held seat ids
-- KEYS[3] released  STRING the screening's count of releases (queue.ReleasedKey)
-- ARGV[1] 'confirm' (held seats are sold now) or 'release' (the seats are available again)
-- ARGV[2..] seat ids
--
-- Returns the released count after the change.
if ARGV[1] == 'release' then
  redis.call('SREM', KEYS[1], unpack(ARGV, 2))
  redis.call('SREM', KEYS[2], unpack(ARGV, 2))
  return redis.call('INCR', KEYS[3])
end
redis.call('SREM', KEYS[2], unpack(ARGV, 2))
return tonumber(redis.call('GET', KEYS[3]) or '0')
