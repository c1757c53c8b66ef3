-- lock.lua: take the locks of every seat of one request, all or nothing. The seats of a screening share its
-- hash tag, so this runs on one slot; no partial hold exists, so no lock-ordering deadlock can either.
-- A seat Redis already knows is sold answers at once, before any lock, so a loser never reaches SQL.
--
-- KEYS[1]      sold  SET of the screening's sold seat ids
-- KEYS[2..n+1] one lock key per seat, in the same order as ARGV[3..n+2]
-- ARGV[1]      owner id
-- ARGV[2]      lease, ms
-- ARGV[3..]    seat ids
--
-- Returns {1} when every lock is taken; {-1, seat} when a seat is sold; {0, seat} when a seat is locked.
for i = 3, #ARGV do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 1 then
    return {-1, ARGV[i]}
  end
end
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return {0, ARGV[i + 1]}
  end
end
for i = 2, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return {1}
