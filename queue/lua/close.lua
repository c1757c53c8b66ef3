-- close.lua: the screening is sold out. Closes registration and disperses the waiting line in one step, so
-- nobody can join a line that will never move. The closing is numbered like any event that moves the line
-- (the first time: closing again repeats the number), so an instance that never hears its sold_out message
-- finds the number missing and reads the line, closed (hub.recheckEpochs).
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] closed   STRING present once the screening is sold out
-- KEYS[3] pre      ZSET token -> random shuffle key, before the line opens
-- KEYS[4] gone     ZSET token -> when its last socket closed
-- KEYS[5] conns    HASH token -> open sockets
-- KEYS[6] epoch    STRING the number of the last event
-- KEYS[7] log      STREAM the admission log's records on their way to the database (docs/admission-log.md)
-- KEYS[8] preinfo  HASH token -> "entry time hash" (register.lua)
-- KEYS[9] wl       STRING present while the line is a waitlist (queue/waitlist.go): set by a sell-out that keeps it
-- KEYS[10] offerable STRING seats that came back and are not offered yet (admit.lua)
-- KEYS[11] allheld  STRING present while every seat is held or sold, some only held: a closed line is not
-- KEYS[12] avail    STRING the seats available as last counted (reopen.lua): none once sold out
-- ARGV[1] why: 'sold_out' (every seat sold: a release may reopen it) or 'closed' (by the operator: for good)
-- ARGV[2] now, Unix ms
-- ARGV[3] '1' when the admission log is kept: a closing that changes the line is logged
-- ARGV[4] '1' when the screening keeps a waitlist: a sell-out keeps the line (it waits for seats that come
--         back, and newcomers join its end); the operator's close drops it all the same
--
-- Returns {the number of tokens that were waiting (in line or in the pre-queue), the closing's epoch, why the
-- line is closed now, 1 when the line was kept as a waitlist}: a sell-out told after the operator's close is
-- still a close.
local n = redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[3])
local epoch
if redis.call('EXISTS', KEYS[2]) == 0 then
  epoch = redis.call('INCR', KEYS[6])
else
  epoch = tonumber(redis.call('GET', KEYS[6]) or '0')
end
local was = redis.call('GET', KEYS[2])
if was ~= 'closed' then
  redis.call('SET', KEYS[2], ARGV[1] or 'sold_out')
end
local why = redis.call('GET', KEYS[2])
local keep = why == 'sold_out' and ARGV[4] == '1'
redis.call('DEL', KEYS[11])
if ARGV[3] == '1' and was ~= why then
  local logged = why
  if keep then
    logged = 'waitlist'
  end
  redis.call('XADD', KEYS[7], '*', 'r', 'close t=' .. ARGV[2] .. ' why=' .. logged)
end
if keep then
  -- Every seat is sold: nothing is left to offer until seats come back (reopen.lua).
  redis.call('SET', KEYS[9], '1')
  redis.call('DEL', KEYS[10])
  redis.call('SET', KEYS[12], '0')
  return {n, epoch, why, 1}
end
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[8], KEYS[9])
return {n, epoch, why, 0}
