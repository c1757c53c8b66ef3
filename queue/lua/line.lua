-- line.lua: a snapshot of what an instance needs to compute every waiting socket's rank on its own (see
-- admit.lua): the last event's number, the head, the last sequence number, the line's length, and every
-- sequence number that left above the head; and the time of the latest admission, where the instance's
-- measure of the admission rate starts. Read when an instance starts following a screening or missed an
-- event; not per tick.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] head     STRING the highest sequence number admitted so far
-- KEYS[3] left     ZSET seq -> seq: sequence numbers that left the line
-- KEYS[4] epoch    STRING the number of the last event
-- KEYS[5] seq      STRING the last sequence number handed out
-- KEYS[6] paused   STRING present while the operator has paused admission
-- KEYS[7] admitat  STRING the `now` of the latest admission (Unix ms)
-- KEYS[8] closed   STRING present once the screening is sold out
-- KEYS[9] wl       STRING present while the line is a waitlist
--
-- Returns {epoch, head, lastSeq, total, paused (0|1), admitat (0: none yet), closed (0|1: 2 when sold out
-- and kept as a waitlist), left...}
local head = tonumber(redis.call('GET', KEYS[2]) or '0')
local out = {
  tonumber(redis.call('GET', KEYS[4]) or '0'), head, tonumber(redis.call('GET', KEYS[5]) or '0'),
  redis.call('ZCARD', KEYS[1]), redis.call('EXISTS', KEYS[6]), tonumber(redis.call('GET', KEYS[7]) or '0'),
  redis.call('EXISTS', KEYS[8]),
}
if out[7] == 1 and redis.call('GET', KEYS[8]) == 'sold_out' and redis.call('EXISTS', KEYS[9]) == 1 then
  out[7] = 2
end
local left = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. head, '+inf')
for i = 1, #left do
  out[#out + 1] = tonumber(left[i])
end
return out
