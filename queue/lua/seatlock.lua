-- seatlock.lua: take the locks of every seat of one request, all or nothing. The seats of a screening share its
-- hash tag, so this runs on one slot; no partial hold exists, so no lock-ordering deadlock can either.
-- A seat Redis already knows is sold answers at once, before any lock, so a loser never reaches SQL; so
-- does every request once the screening is sold out.
--
-- KEYS[1]      closed  STRING present once the screening is sold out (the queue's)
-- KEYS[2]      sold    SET of the screening's sold seat ids
-- KEYS[3..n+2] one lock key per seat, in the same order as ARGV[3..n+2]
-- ARGV[1]      owner id
-- ARGV[2]      lease, ms
-- ARGV[3..]    seat ids
--
-- Returns {1} when every lock is taken; {-2} when sold out; {-1, seat...} naming every requested seat that
-- is sold; {0, seat, holder} naming a seat that is locked and the owner id holding it.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {-2}
end
local sold = {-1}
for i = 3, #ARGV do
  if redis.call('SISMEMBER', KEYS[2], ARGV[i]) == 1 then
    sold[#sold + 1] = ARGV[i]
  end
end
if #sold > 1 then
  return sold
end
for i = 3, #KEYS do
  local holder = redis.call('GET', KEYS[i])
  if holder then
    return {0, ARGV[i], holder}
  end
end
for i = 3, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return {1}
