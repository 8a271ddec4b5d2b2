-- The head of the presence scripts that keep a room's keys alive
-- (presence_touch.lua, presence_refresh.lua).

-- keep_room renews a room's presence hash for ttl seconds, and its history
-- (events, seq) too while only presence keeps it (its TTL at most ttl): a
-- room whose history a join's presence.update made lives while someone is
-- present.
local function keep_room(hash, events, seq, ttl)
  redis.call('EXPIRE', hash, ttl)
  local left = redis.call('TTL', events)
  if left >= 0 and left <= tonumber(ttl) then
    redis.call('EXPIRE', events, ttl)
    redis.call('EXPIRE', seq, ttl)
  end
end

