-- register.lua: put a token in a screening's line once (ZADD NX semantics), or report where it already is.
-- A first registration takes the next number of the screening's dense sequence, so re-registering never
-- burns a number and the line is strictly first come, first served.
--
-- Before the line opens (open.lua, run by the scheduler at the sale time) a newcomer waits in the pre-queue
-- under a random key the caller drew; at opening the pre-queue takes its sequence numbers in the order of
-- those keys, a uniform shuffle (docs/fairness.md). A line with an empty pre-queue opens here, at once, when
-- its sale time has come.
--
-- Every registration counts one more socket for the token (conns; disconnect.lua counts it off), and one
-- of a waiting token forgets that it was gone (abandonment, admit.lua).
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] active   ZSET token -> admission expiry (Unix ms)
-- KEYS[3] seq      STRING the last sequence number handed out
-- KEYS[4] closed   STRING present once the screening is sold out
-- KEYS[5] changed  STRING set when the line changed since the last tick (the next tick pushes positions)
-- KEYS[6] epoch    STRING the number of the last admission event (admit.lua)
-- KEYS[7] pre      ZSET token -> random shuffle key, before the line opens
-- KEYS[8] opened   STRING present once the line is open
-- KEYS[9] paused   STRING present while the operator has paused admission
-- KEYS[10] gone    ZSET token -> when its last socket closed (Unix ms)
-- KEYS[11] conns   HASH token -> open sockets
-- KEYS[12] mark    STRING this registration's mark, set when it counts its socket (or when it was undone
--                  before it ran)
-- KEYS[13] allheld STRING present while every seat is held or sold, some only held
-- KEYS[14] log     STREAM the admission log's records on their way to the database (docs/admission-log.md)
-- KEYS[15] pren    STRING the last pre-queue entry number handed out
-- KEYS[16] preinfo HASH token -> "entry time hash": its pre-queue entry, for its receipt and the opening
-- KEYS[17] placed  HASH token -> "seq time": when it took its place, for its receipt
-- KEYS[18] seed    STRING the shuffle seed (hex), present once the pre-queue has one (seed.lua)
-- KEYS[19] numbering STRING the id of the line's numbering (queue.Numbering), drawn at its first place
-- KEYS[20] wl     STRING present while the line is a waitlist: a sold-out line kept as one takes newcomers
-- KEYS[21] offers HASH token -> seats offered (admit.lua's waitlist)
-- ARGV[1] token
-- ARGV[2] now, Unix ms
-- ARGV[3] the sale time, Unix ms (the line opens then)
-- ARGV[4] a random shuffle key in [0, 2^53), used if the token enters the pre-queue
-- ARGV[5] how long the mark is kept, ms
-- ARGV[6] the token's hash (hex SHA-256) when the admission log is kept, else empty: then nothing is logged
-- ARGV[7] a fresh numbering id, 1 to 2^32-1: the line's, if it has none yet
--
-- A registration whose caller got no answer is undone (disconnect.lua with this mark): if it ran, its socket
-- is counted off; if it had not, the undo sets the mark first, and the registration, arriving late, finds it
-- and does nothing ({"undone"}).
--
-- Returns one of
--   {"undone"}
--   {"closed", why}       (why: 'sold_out' or 'closed', as close.lua set it)
--   {"admitted", expiresAtMs, seats offered (0: not an offer)}
--   {"waiting", zeroBasedRank, total, inserted (0|1), seq, epoch, paused (0|1), allheld (0|1), seq, placedAt, numbering,
--    waitlisted (0|1: the line is a sold-out screening's waitlist)}
--   {"pre", zeroBasedPlace, preTotal, inserted (0|1), 0, epoch, paused (0|1), allheld (0|1), entry, enteredAt}
-- where epoch lets the caller tell whether an event came between this answer and its socket joining the hub,
-- the next two are what the token's receipt states (0, 0 when the log is not kept or has no record of it),
-- and numbering is the numbering seq is of: a line Redis lost numbers again from 1 under another
-- (restore.lua tells them apart).
local token = ARGV[1]
local now = tonumber(ARGV[2])
local opensAt = tonumber(ARGV[3])
local hash = ARGV[6] or ''
local logged = hash ~= ''

-- record appends one record of the admission log.
local function record(text)
  redis.call('XADD', KEYS[14], '*', 'r', text)
end

-- stated splits a "number time ..." receipt entry.
local function stated(v)
  if not v then
    return 0, 0
  end
  local n, t = string.match(v, '^(%d+) (%d+)')
  return tonumber(n), tonumber(t)
end

local closed = redis.call('GET', KEYS[4])
local waitlisted = 0
if closed == 'sold_out' and redis.call('EXISTS', KEYS[20]) == 1 then
  waitlisted = 1
elseif closed then
  return {'closed', closed}
end

-- Marked only where the registration starts to count: one that found the line closed counted nothing,
-- and its undo finds no mark and counts nothing off.
if not redis.call('SET', KEYS[12], '1', 'NX', 'PX', ARGV[5]) then
  return {'undone'}
end

-- Every socket counts, whatever the token's state: disconnect.lua counts each one off.
redis.call('HINCRBY', KEYS[11], token, 1)

local expires = redis.call('ZSCORE', KEYS[2], token)
if expires then
  if tonumber(expires) > now then
    return {'admitted', expires, tonumber(redis.call('HGET', KEYS[21], token) or '0')}
  end
  -- The admission lapsed unused: the slot is already free by time; the holder queues again at the end.
  redis.call('ZREM', KEYS[2], token)
end

redis.call('ZREM', KEYS[10], token)
local paused = redis.call('EXISTS', KEYS[9])
local allHeld = redis.call('EXISTS', KEYS[13])
local epoch = tonumber(redis.call('GET', KEYS[6]) or '0')

if redis.call('EXISTS', KEYS[8]) == 0 then
  if now >= opensAt and redis.call('ZCARD', KEYS[7]) == 0 then
    redis.call('SET', KEYS[8], '1') -- nobody to shuffle: the line opens now
    local seed = logged and redis.call('GET', KEYS[18])
    if seed then
      -- A pre-queue whose every entry left: its seed is revealed all the same, and no place is shuffled.
      record('reveal t=' .. now .. ' seed=' .. seed)
    end
  else
    local inserted = redis.call('ZADD', KEYS[7], 'NX', ARGV[4], token)
    local entry, at = 0, 0
    if logged then
      if inserted == 1 then
        entry, at = redis.call('INCR', KEYS[15]), now
        redis.call('HSET', KEYS[16], token, entry .. ' ' .. now .. ' ' .. hash)
        record('pre t=' .. now .. ' n=' .. entry .. ' h=' .. hash)
      else
        entry, at = stated(redis.call('HGET', KEYS[16], token))
      end
    end
    return {'pre', redis.call('ZRANK', KEYS[7], token), redis.call('ZCARD', KEYS[7]), inserted, 0, epoch, paused, allHeld,
      entry, at}
  end
end

local inserted = 0
local seq = redis.call('ZSCORE', KEYS[1], token)
local at = 0
if not seq then
  seq = redis.call('INCR', KEYS[3])
  redis.call('ZADD', KEYS[1], 'NX', seq, token)
  redis.call('SET', KEYS[5], '1')
  inserted = 1
  if logged then
    at = now
    redis.call('HSET', KEYS[17], token, seq .. ' ' .. now)
    record('place t=' .. now .. ' seq=' .. seq .. ' h=' .. hash)
  end
else
  seq = tonumber(seq)
  if logged then
    local placedSeq, placedAt = stated(redis.call('HGET', KEYS[17], token))
    if placedSeq == seq then
      at = placedAt
    end
  end
end
local receiptSeq = 0
if at > 0 then
  receiptSeq = seq
end
local numbering = redis.call('GET', KEYS[19])
if not numbering then
  numbering = ARGV[7]
  redis.call('SET', KEYS[19], numbering)
end
return {'waiting', redis.call('ZRANK', KEYS[1], token), redis.call('ZCARD', KEYS[1]), inserted,
  seq, epoch, paused, allHeld, receiptSeq, at, tonumber(numbering), waitlisted}
