-- direct.lua: the gate's admission of a visitor straight into a slot, with no wait (the passthrough model):
-- only while nobody waits in the screening's line (nor in its pre-queue) and the active set is below
-- max_active, so a direct admission never jumps anyone who waits and never goes past max_active. A paused,
-- closed, all-held or rebuilding line admits nobody directly, as admit.lua admits nobody.
--
-- The line opens here when its sale time has come and nobody waits in its pre-queue, as register.lua opens it.
-- The clock never runs back (as in admit.lua): a now older than the latest admission's admits at the latest's,
-- so a slot given later never ends sooner than one given before.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] active   ZSET token -> admission expiry (Unix ms)
-- KEYS[3] closed   STRING present once the screening is sold out or closed
-- KEYS[4] opened   STRING present once the line is open
-- KEYS[5] pre      ZSET token -> shuffle key, before the line opens
-- KEYS[6] paused   STRING present while the operator has paused admission
-- KEYS[7] hold     STRING present while a line Redis lost is being rebuilt
-- KEYS[8] allheld  STRING present while every seat is held or sold, some only held
-- KEYS[9] admitat  STRING the `now` of the latest admission (Unix ms)
-- KEYS[10] stats   HASH the screening's counters: admitted, direct
-- KEYS[11] log     STREAM the admission log's records on their way to the database (docs/admission-log.md)
-- ARGV[1] now, Unix ms
-- ARGV[2] max_active
-- ARGV[3] active_ttl, ms
-- ARGV[4] the new token
-- ARGV[5] the sale time, Unix ms
-- ARGV[6] the token's hash when the admission log is kept (the admission is logged), else empty
--
-- Returns {"admitted", expiresAtMs, activeAfter} or {reason, 0, active} with reason one of
-- "closed", "paused", "rebuilding", "all_held", "not_open", "line" (someone waits), "full",
--   "taken" (the token already holds a slot).
local now = tonumber(ARGV[1])
local latest = tonumber(redis.call('GET', KEYS[9]) or '0')
if now < latest then
  now = latest
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local active = redis.call('ZCARD', KEYS[2])
local function refuse(reason)
  return {reason, 0, active}
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return refuse('closed')
end
if redis.call('EXISTS', KEYS[7]) == 1 then
  return refuse('rebuilding')
end
if redis.call('EXISTS', KEYS[6]) == 1 then
  return refuse('paused')
end
if redis.call('EXISTS', KEYS[8]) == 1 then
  return refuse('all_held')
end
if redis.call('ZCARD', KEYS[5]) > 0 then
  return refuse('line')
end
if redis.call('EXISTS', KEYS[4]) == 0 then
  if now < tonumber(ARGV[5]) then
    return refuse('not_open')
  end
  redis.call('SET', KEYS[4], '1')
end
if redis.call('ZCARD', KEYS[1]) > 0 then
  return refuse('line')
end
if active >= tonumber(ARGV[2]) then
  return refuse('full')
end
local expires = now + tonumber(ARGV[3])
if redis.call('ZADD', KEYS[2], 'NX', expires, ARGV[4]) == 0 then
  return refuse('taken') -- the token is already admitted: never twice
end
redis.call('SET', KEYS[9], now)
redis.call('HINCRBY', KEYS[10], 'admitted', 1)
redis.call('HINCRBY', KEYS[10], 'direct', 1)
if ARGV[6] and ARGV[6] ~= '' then
  redis.call('XADD', KEYS[11], '*', 'r', 'direct t=' .. now .. ' h=' .. ARGV[6] .. ' max=' .. ARGV[2] .. ' active=' .. (active + 1))
end
return {'admitted', expires, active + 1}
