-- seatunlock.lua: release the seat locks a request took, each only while it still holds the caller's owner id
-- (a lock whose lease ran out and was taken by another request is left alone), after adding the seats the
-- request learnt are taken (its own, once committed, or those SQL said were taken) to the sold set, in the
-- same step: the next holder of a lock is refused by the lock script, never by a transaction. The sold set
-- holds every seat not available; the held set those of them only held by an order while its buyer pays.
--
-- KEYS[1]      sold set of the screening
-- KEYS[2]      held set of the screening
-- KEYS[3..n]   seat lock keys
-- ARGV[1]      owner id
-- ARGV[2]      '1' when the seats are the request's own, held by its order (not sold)
-- ARGV[3..]    seats to add to the sold set (none: only unlock)
--
-- Returns the number of locks released.
if #ARGV > 2 then
  redis.call('SADD', KEYS[1], unpack(ARGV, 3))
  if ARGV[2] == '1' then
    redis.call('SADD', KEYS[2], unpack(ARGV, 3))
  end
end
local n = 0
for i = 3, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    n = n + redis.call('DEL', KEYS[i])
  end
end
return n
