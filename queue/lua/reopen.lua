-- reopen.lua: seats came back to a screening whose seats were all held (allheld) or sold (closed by the last
-- sale): the line opens again. Numbered like the closing, so every instance reads the line anew; the
-- released count moves, so every instance forgets the seats it remembered sold.
--
-- KEYS[1] closed    STRING present once the screening is sold out
-- KEYS[2] allheld   STRING present while every seat is held or sold
-- KEYS[3] epoch     STRING the number of the last event
-- KEYS[4] released  STRING the screening's count of releases
-- KEYS[5] reopened  STRING present for a while after a reopening: the scheduler's list of sales, read before
--                   it, may still say the sale ended, and must not close the line again (keepClosed)
-- KEYS[6] log       STREAM the admission log's records on their way to the database (docs/admission-log.md)
-- ARGV[1] '1' when a closed line may reopen (it sold out; the operator did not close it)
-- ARGV[2] how long the reopened mark lasts, ms
-- ARGV[3] now, Unix ms
-- ARGV[4] '1' when the admission log is kept: a closed line reopened is logged
-- ARGV[5] how many seats came back
-- ARGV[6] how many seats are available now, as the database counts them after the release (-1: not known):
--         the seats to offer never exceed those available less those the offers out promise, so a seat
--         another buyer (one admitted before the sell-out) took meanwhile is not offered again
-- KEYS[7] wl        STRING present while the line is a waitlist: the seats are added to those to offer
-- KEYS[8] offerable STRING seats that came back and are not offered yet (admit.lua)
-- KEYS[9] offers    HASH token -> seats offered, for every offer out
-- KEYS[10] avail    STRING the seats available as the database last counted them, less those offers took
--
-- Returns {1 when the line reopened (or left all_held), the epoch, 1 when seats were added to offer}; {0,
-- epoch, added} when it was open.
local closed = redis.call('GET', KEYS[1])
local was = redis.call('DEL', KEYS[2])
if closed and ARGV[1] == '1' and closed ~= 'closed' then
  redis.call('DEL', KEYS[1])
  was = 1
  if ARGV[4] == '1' then
    redis.call('XADD', KEYS[6], '*', 'r', 'reopen t=' .. ARGV[3])
  end
end
redis.call('INCR', KEYS[4])
local added = 0
if redis.call('EXISTS', KEYS[7]) == 1 and (not closed or closed ~= 'closed') and tonumber(ARGV[5] or '0') > 0 then
  local n = tonumber(redis.call('GET', KEYS[8]) or '0') + tonumber(ARGV[5])
  local available = tonumber(ARGV[6] or '-1')
  if available >= 0 then
    redis.call('SET', KEYS[10], available)
    local promised = 0
    for _, seats in ipairs(redis.call('HVALS', KEYS[9])) do
      promised = promised + tonumber(seats)
    end
    n = math.min(n, math.max(0, available - promised))
  else
    redis.call('DEL', KEYS[10]) -- not counted: what lapsed offers give back is not bound either
  end
  redis.call('SET', KEYS[8], n)
  added = 1
end
if was == 0 then
  return {0, tonumber(redis.call('GET', KEYS[3]) or '0'), added}
end
redis.call('SET', KEYS[5], '1', 'PX', ARGV[2])
return {1, redis.call('INCR', KEYS[3]), added}
