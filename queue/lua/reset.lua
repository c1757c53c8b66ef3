-- reset.lua: the last step of a sale's reset (Reset): the line, closed and emptied of everything else,
-- opens again as new. Nobody of the old numbering waits any more, so the head moves up to the last sequence
-- number and no sequence number is left above it: the next arrival is first. The closing goes, the released
-- count moves (every instance forgets the seats it remembered sold), the reopened mark keeps the
-- schedulers' older list of sales from closing the line again (keepClosed), and the change is numbered like
-- any event that moves the line, so every instance reads the line anew.
--
-- KEYS[1] closed    STRING present once the screening is sold out (here: closed for the reset)
-- KEYS[2] allheld   STRING present while every seat is held or sold
-- KEYS[3] epoch     STRING the number of the last event
-- KEYS[4] released  STRING the screening's count of releases
-- KEYS[5] reopened  STRING present for a while after a reopening
-- KEYS[6] head      STRING the highest sequence number admitted so far
-- KEYS[7] seq       STRING the last sequence number handed out
-- KEYS[8] left      ZSET seq -> seq: sequence numbers that left the line, above the head
-- KEYS[9] leftnew   LIST sequence numbers that left since the last event
-- KEYS[10] log      STREAM the admission log's records on their way to the database (docs/admission-log.md)
-- ARGV[1] how long the reopened mark lasts, ms
-- ARGV[2] now, Unix ms
-- ARGV[3] '1' when the admission log is kept: the line's reopening is logged
--
-- Returns the reset's epoch.
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('XADD', KEYS[10], '*', 'r', 'reopen t=' .. ARGV[2])
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[8], KEYS[9])
redis.call('SET', KEYS[6], redis.call('GET', KEYS[7]) or '0')
redis.call('INCR', KEYS[4])
redis.call('SET', KEYS[5], '1', 'PX', ARGV[1])
return redis.call('INCR', KEYS[3])
