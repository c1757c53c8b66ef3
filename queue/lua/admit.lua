-- admit.lua: one admission of one screening, all or nothing. Drops expired admissions, computes
-- room = min(batch, max_active - active), pops the earliest `room` waiting tokens and adds each to the active
-- set with its expiry, in one script: nobody can be popped without being activated.
--
-- Two modes. A "tick" (the scheduler's pace) admits up to batch_size. A "refill" (right after a reservation
-- or a leave freed a slot) admits only as many as slots were freed since the last admission, so finishing
-- users are replaced at once while the pace of new admissions stays the ticks'.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] active   ZSET token -> admission expiry (Unix ms)
-- KEYS[3] spent    ZSET pass id -> pass expiry (Unix ms)
-- KEYS[4] closed   STRING present once the screening is sold out
-- KEYS[5] changed  STRING set when the line changed since the last admission (joins, leaves); cleared here
-- KEYS[6] freed    STRING slots freed by reservations and leaves since the last admission
-- ARGV[1] now, Unix ms
-- ARGV[2] batch_size
-- ARGV[3] max_active
-- ARGV[4] the admitted tokens' expiry, Unix ms (now + active_ttl)
-- ARGV[5] mode: "tick" or "refill"
--
-- Returns {skipReason ("" when someone was admitted), expiresAtMs, activeAfter, waitingAfter, moved, token...}
-- where moved is 1 when the line changed since the last admission (this one's included), so the waiting
-- must be told their new rank and total.
local now = tonumber(ARGV[1])
local batch = tonumber(ARGV[2])
local maxActive = tonumber(ARGV[3])
local expires = tonumber(ARGV[4])
local refill = ARGV[5] == 'refill'

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)

local active = redis.call('ZCARD', KEYS[2])
local waiting = redis.call('ZCARD', KEYS[1])
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {'NO_VALID_SCREENING', 0, active, waiting, 0}
end
if refill then
  batch = math.min(batch, tonumber(redis.call('GET', KEYS[6]) or '0'))
  if batch <= 0 or waiting == 0 or active >= maxActive then
    return {'NOTHING_FREED', 0, active, waiting, 0}
  end
else
  redis.call('DEL', KEYS[6])
end
local moved = redis.call('DEL', KEYS[5])
if waiting == 0 then
  return {'QUEUE_EMPTY', 0, active, waiting, moved}
end
local room = math.min(batch, maxActive - active)
if room <= 0 then
  return {'ACTIVE_CAPACITY_REACHED', 0, active, waiting, moved}
end

local popped = redis.call('ZPOPMIN', KEYS[1], room)
local out = {'', expires, 0, 0, 1}
for i = 1, #popped, 2 do
  redis.call('ZADD', KEYS[2], expires, popped[i])
  out[#out + 1] = popped[i]
end
local n = #popped / 2
if refill then
  redis.call('DECRBY', KEYS[6], n)
end
out[3] = active + n
out[4] = waiting - n
return out
