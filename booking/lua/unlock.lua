-- unlock.lua: release the seat locks a request took, each only while it still holds the caller's owner id
-- (a lock whose lease ran out and was taken by another request is left alone), after adding the seats the
-- request learnt are sold (its own, once committed, or those SQL said were taken) to the sold set, in the
-- same step: the next holder of a lock is refused by the lock script, never by a transaction.
--
-- KEYS[1]      sold set of the screening
-- KEYS[2..n]   seat lock keys
-- ARGV[1]      owner id
-- ARGV[2..]    seats to add to the sold set (none: only unlock)
--
-- Returns the number of locks released.
if #ARGV > 1 then
  redis.call('SADD', KEYS[1], unpack(ARGV, 2))
end
local n = 0
for i = 2, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    n = n + redis.call('DEL', KEYS[i])
  end
end
return n
