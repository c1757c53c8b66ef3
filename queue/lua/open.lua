-- open.lua: open a screening's line at its sale time, once. The pre-queue's tokens take the next sequence
-- numbers in the order of their random keys (drawn independently at registration, so the order is a uniform
-- random permutation of those who came early; docs/fairness.md); those whose sockets have been gone longer
-- than the grace are dropped instead (abandoned). Numbers the change as an event, like admit.lua, and returns
-- the whole line so every instance can rebase on it.
--
-- With a beacon's round mixed in (queue/beacon.go), the keys are not the scores: the caller computed them
-- (Lua has no HMAC) and passes the tokens that came before the round was due, in key order; every other
-- token came after it and is placed after them, by entry number. A token that came before the round was due
-- but is not among those passed (it came in after the caller read the pre-queue) makes the script refuse,
-- changing nothing: the caller reads again.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] seq      STRING the last sequence number handed out
-- KEYS[3] epoch    STRING the number of the last event
-- KEYS[4] pre      ZSET token -> random shuffle key
-- KEYS[5] opened   STRING present once the line is open
-- KEYS[6] gone     ZSET token -> when its last socket closed (Unix ms)
-- KEYS[7] head     STRING the highest sequence number admitted so far
-- KEYS[8] left     ZSET seq -> seq: sequence numbers that left the line, above the head
-- KEYS[9] closed   STRING present once the screening is sold out
-- KEYS[10] stats   HASH the screening's counters (abandoned)
-- KEYS[11] log     STREAM the admission log's records on their way to the database (docs/admission-log.md)
-- KEYS[12] preinfo HASH token -> "entry time hash" (register.lua)
-- KEYS[13] placed  HASH token -> "seq time" (register.lua)
-- KEYS[14] seed    STRING the shuffle seed (hex; seed.lua)
-- ARGV[1] now, Unix ms
-- ARGV[2] gone before this (Unix ms: now - grace) counts as abandoned
-- ARGV[3] '1' when the admission log is kept: the entries dropped, the seed and the shuffled places are
--         logged, in that order
-- ARGV[4] when the beacon's round was due (Unix ms), or '0' when none is mixed in: the order is the scores'
-- ARGV[5] the reveal's beacon fields (' round=R randomness=X signature=Y', ' round=R randomness=none'), or ''
-- ARGV[6..] with a round mixed in: the tokens that came before it was due, in their mixed keys' order
--
-- Returns {opened (0: already open or closed), shuffled, abandoned, epoch, head, lastSeq, total, left...},
-- or {-1} when a token that came before the round was due is not among ARGV[6..].
if redis.call('EXISTS', KEYS[5]) == 1 or redis.call('EXISTS', KEYS[9]) == 1 then
  return {0, 0, 0}
end
local now = ARGV[1]
local cutoff = tonumber(ARGV[2])
local logged = ARGV[3] == '1'
local dueMs = tonumber(ARGV[4])
local members
if dueMs > 0 then
  members = {}
  local given = {}
  for i = 6, #ARGV do
    local t = ARGV[i]
    given[t] = true
    if redis.call('ZSCORE', KEYS[4], t) then
      members[#members + 1] = t
    end
  end
  local late = {}
  for _, t in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    if not given[t] then
      local n, at = string.match(redis.call('HGET', KEYS[12], t) or '', '^(%d+) (%d+)')
      if n and tonumber(at) < dueMs then
        return {-1}
      end
      late[#late + 1] = {tonumber(n or '9007199254740992'), t}
    end
  end
  table.sort(late, function(a, b) return a[1] < b[1] end)
  for _, l in ipairs(late) do
    members[#members + 1] = l[2]
  end
else
  members = redis.call('ZRANGE', KEYS[4], 0, -1)
end
redis.call('SET', KEYS[5], '1')
local shuffled, abandoned = 0, 0
local stays = {}
for i = 1, #members do
  local t = members[i]
  local gone = redis.call('ZSCORE', KEYS[6], t)
  if gone and tonumber(gone) <= cutoff then
    redis.call('ZREM', KEYS[6], t)
    abandoned = abandoned + 1
    local info = logged and redis.call('HGET', KEYS[12], t)
    if info then
      redis.call('XADD', KEYS[11], '*', 'r', 'pre-gone t=' .. now .. ' n=' .. string.match(info, '^(%d+)') .. ' why=abandoned')
    end
  else
    stays[#stays + 1] = t
  end
end
local seed = logged and redis.call('GET', KEYS[14])
if seed then
  redis.call('XADD', KEYS[11], '*', 'r', 'reveal t=' .. now .. ' seed=' .. seed .. ARGV[5])
end
for i = 1, #stays do
  local t = stays[i]
  local seq = redis.call('INCR', KEYS[2])
  redis.call('ZADD', KEYS[1], 'NX', seq, t)
  shuffled = shuffled + 1
  local info = logged and redis.call('HGET', KEYS[12], t)
  if info then
    local entry, _, hash = string.match(info, '^(%d+) (%d+) (%x+)$')
    redis.call('HSET', KEYS[13], t, seq .. ' ' .. now)
    redis.call('XADD', KEYS[11], '*', 'r', 'place t=' .. now .. ' seq=' .. seq .. ' h=' .. hash .. ' n=' .. entry)
  end
end
redis.call('DEL', KEYS[4], KEYS[12])
if abandoned > 0 then
  redis.call('HINCRBY', KEYS[10], 'abandoned', abandoned)
end
local head = tonumber(redis.call('GET', KEYS[7]) or '0')
local out = {1, shuffled, abandoned, redis.call('INCR', KEYS[3]), head, tonumber(redis.call('GET', KEYS[2]) or '0'),
  redis.call('ZCARD', KEYS[1])}
local left = redis.call('ZRANGEBYSCORE', KEYS[8], '(' .. head, '+inf')
for i = 1, #left do
  out[#out + 1] = tonumber(left[i])
end
return out
