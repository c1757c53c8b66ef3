-- unlock.lua: compare-and-delete. Deletes the lock only while it still holds the caller's owner id, so an
-- instance whose lock expired can never release the lock another instance took since.
--
-- KEYS[1] lock  STRING owner id
-- ARGV[1] owner id
--
-- Returns 1 when released, 0 when the lock was not the caller's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
