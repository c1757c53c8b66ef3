-- restore.lua: rebuild a screening's line after Redis lost it (a restart without persistence), from what an
-- instance's connected sockets know: each waiting token's sequence number and each admitted token's expiry.
-- Tokens already back (restored by another instance) are left alone; tokens that registered after the loss
-- (numbered from 1 again) move behind everyone restored, in their order, even when a socket here holds that
-- new number: a standing of the numbering Redis has now (register.lua draws a new one after the loss) is
-- not put back as if it were of the lost line. The sequence counter is
-- kept above every number restored; the head becomes just below the lowest waiting number, and every number
-- between it and the last one that is not waiting counts as left, so ranks computed from the line
-- (queue.Line) are exact again: the restored keep their order, and those whose sockets are gone are not
-- waited for. Numbers the change as an event and returns the whole line, like open.lua.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] active   ZSET token -> admission expiry (Unix ms)
-- KEYS[3] seq      STRING the last sequence number handed out
-- KEYS[4] opened   STRING present once the line is open
-- KEYS[5] epoch    STRING the number of the last event
-- KEYS[6] head     STRING the highest sequence number admitted so far
-- KEYS[7] left     ZSET seq -> seq: sequence numbers that left the line, above the head
-- KEYS[8] leftnew  LIST sequence numbers that left since the last event
-- KEYS[9] closed   STRING present once the screening is sold out
-- KEYS[10] hold    STRING present while admission waits for every instance to rebuild (admit.lua skips)
-- KEYS[11] restored SET the tokens put back since the loss (kept for ten holds)
-- KEYS[12] numbering STRING the id of the line's numbering (register.lua); drawn here if the loss left none
-- ARGV[1] now, Unix ms
-- ARGV[2] how long the first rebuild holds admission, ms: the other instances' sockets come back meanwhile,
--         so nobody is admitted ahead of someone whose instance has not rebuilt yet
-- ARGV[3] a fresh numbering id, 1 to 2^32-1: the line's, if nobody registered since the loss
-- ARGV[4..] quadruples: token, sequence number (0: not waiting), admission expiry in Unix ms (0: not
--         admitted), the numbering the sequence number is of (0: not known: taken as the lost line's)
--
-- Returns {restored (-1: the screening is closed), epoch, head, lastSeq, total, left...}
if redis.call('EXISTS', KEYS[9]) == 1 then
  return {-1}
end
local now = tonumber(ARGV[1])
local restored = 0
redis.call('SET', KEYS[10], '1', 'PX', ARGV[2], 'NX')
-- The numbering of the places handed out since the loss, if any was.
local current = redis.call('GET', KEYS[12])
if not current then
  redis.call('SET', KEYS[12], ARGV[3])
end
for i = 4, #ARGV, 4 do
  local token, seq, exp, numbering = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), ARGV[i + 3]
  if redis.call('SISMEMBER', KEYS[11], token) == 0 and not redis.call('ZSCORE', KEYS[2], token) then
    if exp > now then
      redis.call('ZADD', KEYS[2], exp, token)
      redis.call('ZREM', KEYS[1], token)
      redis.call('SADD', KEYS[11], token)
      restored = restored + 1
    elseif seq > 0 and numbering ~= current then
      redis.call('ZADD', KEYS[1], seq, token)
      redis.call('SADD', KEYS[11], token)
      restored = restored + 1
    end
  end
end
redis.call('PEXPIRE', KEYS[11], tonumber(ARGV[2]) * 10)
redis.call('SET', KEYS[4], '1')

-- Whoever waits without having been restored registered after the loss (numbering from 1 again): behind
-- everyone restored, in the order they came.
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
local current = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local newcomers = {}
for i = 1, #current, 2 do
  local s = tonumber(current[i + 1])
  if s > last then last = s end
  if redis.call('SISMEMBER', KEYS[11], current[i]) == 0 then
    newcomers[#newcomers + 1] = current[i]
  end
end
for i = 1, #newcomers do
  last = last + 1
  redis.call('ZADD', KEYS[1], last, newcomers[i])
end
local waiting = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local present = {}
local lowest = nil
for i = 2, #waiting, 2 do
  local s = tonumber(waiting[i])
  present[s] = true
  if not lowest or s < lowest then lowest = s end
end
redis.call('SET', KEYS[3], last)
local head = last
if lowest then head = lowest - 1 end
redis.call('SET', KEYS[6], head)
redis.call('DEL', KEYS[7], KEYS[8])
local out = {restored, redis.call('INCR', KEYS[5]), head, last, #waiting / 2}
for s = head + 1, last do
  if not present[s] then
    redis.call('ZADD', KEYS[7], s, s)
    out[#out + 1] = s
  end
end
return out
