-- offertaken.lua: one function that finish.lua and keepslot.lua both run (queue prepends it to each): an
-- order made with a waitlist's offer (admit.lua) takes the offer.
--
-- takeOffer(k, token, expiry, used): KEYS[k] .. KEYS[k+4] are the screening's offers (HASH token -> seats
-- offered), offerable (STRING seats back, not offered yet), wlnews (LIST the offers' news), stats (HASH its
-- counters) and avail (STRING the seats available as last counted: reopen.lua); token's offer, if it holds
-- one, is taken by an order of `used` seats: the seats offered beyond them go back to the next offer round,
-- those taken are no longer available, and the news "taken token offered expiry used" is queued.
local function takeOffer(k, token, expiry, used)
  local offered = redis.call('HGET', KEYS[k], token)
  if not offered then
    return
  end
  redis.call('HDEL', KEYS[k], token)
  local back = tonumber(offered) - tonumber(used)
  if back > 0 then
    redis.call('INCRBY', KEYS[k + 1], back)
  end
  redis.call('HINCRBY', KEYS[k + 3], 'offers_taken', 1)
  if redis.call('EXISTS', KEYS[k + 4]) == 1 and redis.call('DECRBY', KEYS[k + 4], used) < 0 then
    redis.call('SET', KEYS[k + 4], '0')
  end
  redis.call('RPUSH', KEYS[k + 2], 'taken ' .. token .. ' ' .. offered .. ' ' .. expiry .. ' ' .. used)
end

