-- seatheld.lua: does the caller still hold every seat lock it took? Asked right before commit, so a request
-- whose lease ran out while it worked rolls back instead of racing the newer holder.
--
-- KEYS[1..n] seat lock keys
-- ARGV[1]    owner id
--
-- Returns 1 when every lock still holds the owner id, 0 otherwise.
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
return 1
