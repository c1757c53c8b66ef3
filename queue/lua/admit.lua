-- admit.lua: one admission of one screening, all or nothing. Drops expired admissions, computes
-- room = min(batch, max_active - active), pops the earliest `room` waiting tokens and adds each to the active
-- set with its expiry, in one script: nobody can be popped without being activated.
--
-- Two modes. A "tick" (the scheduler's pace) admits up to batch_size. A "refill" (right after a reservation
-- or a leave freed a slot) admits only as many as slots were freed since the last admission, so finishing
-- users are replaced at once while the pace of new admissions stays the ticks'.
--
-- When the line moved (someone was admitted, joined or left since the last published admission), the
-- script also numbers the event (epoch) and returns what every instance needs to compute each waiting
-- socket's rank on its own, with no Redis command per socket: the head (the highest sequence number ever
-- admitted), the last sequence number handed out, and the sequence numbers that left since the last event.
-- For a waiting entry with sequence number s, at this moment,
--   ZRANK + 1 = s - head - #{left sequence numbers in (head, s)}
-- because admission always pops the lowest numbers and numbers are dense.
--
-- KEYS[1] waiting  ZSET token -> sequence number
-- KEYS[2] active   ZSET token -> admission expiry (Unix ms)
-- KEYS[3] spent    ZSET pass id -> pass expiry (Unix ms)
-- KEYS[4] closed   STRING present once the screening is sold out
-- KEYS[5] changed  STRING set when the line changed since the last admission (joins, leaves); cleared here
-- KEYS[6] freed    STRING slots freed by reservations and leaves since the last admission
-- KEYS[7] head     STRING the highest sequence number admitted so far
-- KEYS[8] left     ZSET seq -> seq: sequence numbers that left the line, above the head
-- KEYS[9] leftnew  LIST sequence numbers that left since the last event
-- KEYS[10] epoch   STRING the number of the last event
-- KEYS[11] seq     STRING the last sequence number handed out
-- KEYS[12] opened  STRING present once the line is open (open.lua; until then the line is empty)
-- KEYS[13] paused  STRING present while the operator has paused admission
-- KEYS[14] gone    ZSET token -> when its last socket closed (Unix ms; disconnect.lua)
-- KEYS[15] stats   HASH the screening's counters: admitted, abandoned, skip:<reason>
-- KEYS[16] hold    STRING present while a line Redis lost is being rebuilt (restore.lua): nobody is admitted
-- KEYS[17] admitat STRING the `now` of the latest admission (Unix ms)
-- KEYS[18] allheld STRING present while every seat is held or sold and some only held (nobody is admitted)
-- KEYS[19] log     STREAM the admission log's records on their way to the database (docs/admission-log.md)
-- KEYS[20] pace    STRING the pace last logged: "interval batch max_active"
-- KEYS[21] wl      STRING present while the line is a waitlist (a sell-out kept it: close.lua, Queue.AllHeld)
-- KEYS[22] offerable STRING seats that came back and are not offered yet (reopen.lua adds them)
-- KEYS[23] offers  HASH token -> seats offered, for every offer out
-- KEYS[24] party   HASH token -> the party size a waitlisted token waits for (absent: 1)
-- KEYS[25] wlheld  STRING the token the seats waited one round for (the party rule, below)
-- KEYS[26] wlnews  LIST what happened to offers, for the webhooks and e-mails: "offered|expired token seats expiry"
-- KEYS[27] keep    SET the tokens that left an e-mail address: never abandoned while they wait
-- KEYS[28] avail   STRING the seats available as the database last counted them (reopen.lua), less those
--                  offers took: what lapsed offers give back never exceeds it less the offers still out
-- ARGV[1] now, Unix ms. An admission's clock never runs back: a caller whose now is older than the latest
--         admission's (a tick that took its now before a slow lock, while a refill on another instance
--         admitted) admits at the latest admission's now, and its expiry moves with it. So a user admitted
--         later never holds a slot that ends sooner than one admitted before.
-- ARGV[2] batch_size
-- ARGV[3] max_active
-- ARGV[4] the admitted tokens' expiry, Unix ms (now + active_ttl)
-- ARGV[5] mode: "tick" or "refill"
-- ARGV[6] a tick first drops, as abandoned, the waiting tokens gone at or before this (Unix ms: now - grace)
-- ARGV[7] '1' when the admission log is kept: the drops, a new pace and the admission are logged
-- ARGV[8] the interval between ticks, ms (logged with the pace)
-- ARGV[9] an offer's expiry, Unix ms (now + booking.offer_ttl)
-- ARGV[10] how many waiting entries an offer round looks at, at most
--
-- A waitlist (docs/protocol.md 5.4). Once a sold-out line was kept as a waitlist (KEYS[21]), admission is by
-- offers: seats that came back (KEYS[22]) are offered to the waiting in their order, each entry its party's
-- seats (KEYS[24], 1 when unset), never more seats than came back, at most batch_size per round and never
-- past max_active. An entry whose party does not fit what came back keeps its place and is offered first
-- as soon as enough seats are back; the seats wait for it until the end of the first tick that found it
-- first and not fitting (KEYS[25]), no longer: from then on a round offers the parties behind it that fit.
-- An offer not taken before its expiry gives its seats back to the next round; an offer taken
-- (keepslot.lua, finish.lua) gives back the seats it did not use. Offers out of order are recorded as
-- leaves above the head, so ranks stay exact (queue.Line).
--
-- Returns {skipReason ("" when someone was admitted), expiresAtMs, activeAfter, waitingAfter, moved,
--          abandoned, epoch, head, lastSeq, #left, left..., token..., ['offers', seats...]}
-- ('offers' and each offered token's seats, in the tokens' order, when the admission was an offer round)
-- where moved is 1 when the line changed (the event must be published; epoch..left are 0/empty otherwise).
local now = tonumber(ARGV[1])
local batch = tonumber(ARGV[2])
local maxActive = tonumber(ARGV[3])
local expires = tonumber(ARGV[4])
local latest = tonumber(redis.call('GET', KEYS[17]) or '0')
if now < latest then
  expires = expires + (latest - now)
  now = latest
end
local refill = ARGV[5] == 'refill'
local abandoned = 0
local logged = ARGV[7] == '1'

-- record appends one record of the admission log.
local function record(text)
  redis.call('XADD', KEYS[19], '*', 'r', text)
end

if logged then
  local pace = ARGV[8] .. ' ' .. ARGV[2] .. ' ' .. ARGV[3]
  if redis.call('GET', KEYS[20]) ~= pace then
    redis.call('SET', KEYS[20], pace)
    record('pace t=' .. now .. ' interval=' .. ARGV[8] .. ' batch=' .. ARGV[2] .. ' max=' .. ARGV[3])
  end
end

-- event numbers the line's change and drains the leaves since the last event.
local function event(skip, exp, active, waiting, tokens)
  local head = tonumber(redis.call('GET', KEYS[7]) or '0')
  redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', head)
  local left = redis.call('LRANGE', KEYS[9], 0, -1)
  redis.call('DEL', KEYS[9])
  local epoch = redis.call('INCR', KEYS[10])
  local last = tonumber(redis.call('GET', KEYS[11]) or '0')
  local out = {skip, exp, active, waiting, 1, abandoned, epoch, head, last, #left}
  for i = 1, #left do
    out[#out + 1] = tonumber(left[i])
  end
  for i = 1, #tokens do
    out[#out + 1] = tokens[i]
  end
  return out
end

local wl = redis.call('EXISTS', KEYS[21]) == 1
if wl then
  -- Offers that lapsed untaken give their seats back (not while sold out: none are free then).
  local out = redis.call('HGETALL', KEYS[23])
  local back = 0
  for i = 1, #out, 2 do
    local until_ = redis.call('ZSCORE', KEYS[2], out[i])
    if not until_ or tonumber(until_) <= now then
      redis.call('HDEL', KEYS[23], out[i])
      back = back + tonumber(out[i + 1])
      redis.call('HINCRBY', KEYS[15], 'offers_expired', 1)
      redis.call('RPUSH', KEYS[26], 'expired ' .. out[i] .. ' ' .. out[i + 1] .. ' ' .. (until_ or '0'))
    end
  end
  -- Not while sold out or all held: no seat is available then (one another buyer took meanwhile).
  if back > 0 and redis.call('EXISTS', KEYS[4]) == 0 and redis.call('EXISTS', KEYS[18]) == 0 then
    local n = tonumber(redis.call('GET', KEYS[22]) or '0') + back
    local avail = redis.call('GET', KEYS[28])
    if avail then
      local promised = 0
      for _, seats in ipairs(redis.call('HVALS', KEYS[23])) do
        promised = promised + tonumber(seats)
      end
      n = math.min(n, math.max(0, tonumber(avail) - promised))
    end
    redis.call('SET', KEYS[22], n)
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)

-- skipped counts a reason that admitted nobody.
local function skipped(reason)
  redis.call('HINCRBY', KEYS[15], 'skip:' .. reason, 1)
  return reason
end

local active = redis.call('ZCARD', KEYS[2])
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {skipped('NO_VALID_SCREENING'), 0, active, 0, 0}
end
-- Before the line opens everyone is in the pre-queue: waiting is empty, and nobody is swept yet.
if not refill and redis.call('EXISTS', KEYS[12]) == 1 then
  -- Abandonment: a waiting token whose sockets all closed before the cutoff leaves the line as a leave does.
  local gone = redis.call('ZRANGEBYSCORE', KEYS[14], '-inf', ARGV[6])
  for i = 1, #gone do
    local seq = redis.call('ZSCORE', KEYS[1], gone[i])
    if seq and redis.call('SISMEMBER', KEYS[27], gone[i]) == 0 then
      redis.call('ZREM', KEYS[1], gone[i])
      redis.call('ZADD', KEYS[8], seq, seq)
      redis.call('RPUSH', KEYS[9], seq)
      redis.call('SET', KEYS[5], '1')
      abandoned = abandoned + 1
      if logged then
        record('gone t=' .. now .. ' seq=' .. seq .. ' why=abandoned')
      end
    end
    redis.call('ZREM', KEYS[14], gone[i])
  end
  if abandoned > 0 then
    redis.call('HINCRBY', KEYS[15], 'abandoned', abandoned)
  end
end
local waiting = redis.call('ZCARD', KEYS[1])
local paused = redis.call('EXISTS', KEYS[13]) == 1
local allHeld = redis.call('EXISTS', KEYS[18]) == 1
local offerable = 0
if wl then
  offerable = tonumber(redis.call('GET', KEYS[22]) or '0')
end
if refill then
  if wl then
    -- An offer round runs whenever seats came back, not only into freed slots.
    redis.call('DEL', KEYS[6])
    if offerable <= 0 then
      batch = 0
    end
  else
    batch = math.min(batch, tonumber(redis.call('GET', KEYS[6]) or '0'))
  end
  if paused or allHeld or batch <= 0 or waiting == 0 or active >= maxActive or redis.call('EXISTS', KEYS[16]) == 1 then
    return {'NOTHING_FREED', 0, active, waiting, 0}
  end
else
  redis.call('DEL', KEYS[6])
end
local moved = redis.call('DEL', KEYS[5])
local skip = nil
if redis.call('EXISTS', KEYS[16]) == 1 then
  skip = 'REBUILDING'
elseif paused then
  skip = 'PAUSED'
elseif allHeld then
  skip = 'ALL_HELD'
elseif waiting == 0 then
  skip = 'QUEUE_EMPTY'
elseif math.min(batch, maxActive - active) <= 0 then
  skip = 'ACTIVE_CAPACITY_REACHED'
elseif wl and offerable <= 0 then
  skip = 'NO_SEATS_BACK'
end
if skip then
  skipped(skip)
  if moved == 1 then
    return event(skip, 0, active, waiting, {})
  end
  return {skip, 0, active, waiting, 0, abandoned}
end

local room = math.min(batch, maxActive - active)
local popped
local seats = nil
if wl then
  -- An offer round: the waiting in order, each offered its party's seats while they fit (see above).
  popped, seats = {}, {}
  local scan = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[10]) - 1, 'WITHSCORES')
  local heldFor = redis.call('GET', KEYS[25])
  local passed = false
  for i = 1, #scan, 2 do
    if #seats >= room or offerable <= 0 then
      break
    end
    local token, seq = scan[i], scan[i + 1]
    local p = tonumber(redis.call('HGET', KEYS[24], token) or '1')
    if p <= offerable then
      redis.call('ZREM', KEYS[1], token)
      if passed then
        -- Offered past a larger party that keeps its place: a leave above the head, for the ranks.
        redis.call('ZADD', KEYS[8], seq, seq)
        redis.call('RPUSH', KEYS[9], seq)
      else
        redis.call('SET', KEYS[7], seq)
      end
      popped[#popped + 1] = token
      popped[#popped + 1] = seq
      seats[#seats + 1] = p
      offerable = offerable - p
      redis.call('HSET', KEYS[23], token, p)
      redis.call('RPUSH', KEYS[26], 'offered ' .. token .. ' ' .. p .. ' ' .. ARGV[9])
    elseif not passed and heldFor ~= token then
      -- The first party that does not fit: the seats wait for it until the end of this tick's round.
      if not refill then
        redis.call('SET', KEYS[25], token)
      end
      break
    else
      passed = true
    end
  end
  redis.call('SET', KEYS[22], offerable)
  if #seats == 0 then
    skipped('NO_SEATS_BACK')
    if moved == 1 then
      return event('NO_SEATS_BACK', 0, active, waiting, {})
    end
    return {'NO_SEATS_BACK', 0, active, waiting, 0, abandoned}
  end
  expires = tonumber(ARGV[9])
  redis.call('HINCRBY', KEYS[15], 'offered', #seats)
else
  popped = redis.call('ZPOPMIN', KEYS[1], room)
end
local tokens = {}
for i = 1, #popped, 2 do
  redis.call('ZADD', KEYS[2], expires, popped[i])
  tokens[#tokens + 1] = popped[i]
end
if not seats then
  redis.call('SET', KEYS[7], popped[#popped])
end
redis.call('SET', KEYS[17], now)
local n = #tokens
redis.call('HINCRBY', KEYS[15], 'admitted', n)
if logged then
  -- The popped sequence numbers, lowest first, as ranges: "1-300,302,305-310".
  local ranges, first, last = {}, nil, nil
  for i = 2, #popped, 2 do
    local seq = tonumber(popped[i])
    if last and seq == last + 1 then
      last = seq
    else
      if first then
        ranges[#ranges + 1] = first == last and tostring(first) or (first .. '-' .. last)
      end
      first, last = seq, seq
    end
  end
  ranges[#ranges + 1] = first == last and tostring(first) or (first .. '-' .. last)
  local via = 'tick'
  if seats then
    via = 'offer'
  elseif refill then
    via = 'refill'
  end
  record('admit t=' .. now .. ' via=' .. via .. ' seqs=' .. table.concat(ranges, ',') .. ' batch=' .. ARGV[2] ..
    ' max=' .. ARGV[3] .. ' active=' .. (active + n))
end
if refill and not seats then
  redis.call('DECRBY', KEYS[6], n)
end
local out = event('', expires, active + n, waiting - n, tokens)
if seats then
  out[#out + 1] = 'offers'
  for i = 1, #seats do
    out[#out + 1] = seats[i]
  end
end
return out
