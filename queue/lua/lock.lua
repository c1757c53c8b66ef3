-- lock.lua: take a screening's admission lock for one tick. Ticks are numbered by the start of their
-- wall-clock interval (Unix ms), so numbers keep rising when an operator changes the interval; a tick that
-- any instance has already taken cannot be taken again, so instances whose tickers are out of phase still
-- admit once per interval cluster-wide.
--
-- KEYS[1] lock      STRING owner id, with a TTL
-- KEYS[2] lastTick  STRING the number of the last tick taken
-- ARGV[1] owner id
-- ARGV[2] lock TTL, ms
-- ARGV[3] tick number
--
-- Returns 1 when taken, 0 on a miss.
local last = tonumber(redis.call('GET', KEYS[2]) or '-1')
if last >= tonumber(ARGV[3]) then
  return 0
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
redis.call('SET', KEYS[2], ARGV[3])
return 1
