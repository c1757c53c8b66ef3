-- unlock.lua: release the seat locks a request took, each only while it still holds the caller's owner id
-- (a lock whose lease ran out and was taken by another request is left alone).
--
-- KEYS[1..n] seat lock keys
-- ARGV[1]    owner id
--
-- Returns the number of locks released.
local n = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    n = n + redis.call('DEL', KEYS[i])
  end
end
return n
