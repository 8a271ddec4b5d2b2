-- Remove a member (a closing stream) and/or expired members, and report the
-- users left with none: each such user leaves once (HDEL tells), queued as a
-- transition for presence.update. Used on stream close (one user, its member)
-- and by the sweeper (many users, no member).
-- KEYS[1]     presence:{room}            hash userId -> last seen (ms)
-- KEYS[2]     presence:changes:{room}    queued transitions
-- KEYS[3..n]  presence:conns:{room}:<u>  one zset per user, in ARGV order
-- ARGV[1]     member to remove ("" for none)
-- ARGV[2]     key ttl in seconds
-- ARGV[3..n]  user ids
-- Returns the user ids that left.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local left = {}
for i = 3, #KEYS do
  local conns, user = KEYS[i], ARGV[i]
  if ARGV[1] ~= '' then
    redis.call('ZREM', conns, ARGV[1])
  end
  redis.call('ZREMRANGEBYSCORE', conns, '-inf', now)
  if redis.call('ZCARD', conns) == 0 and redis.call('HDEL', KEYS[1], user) == 1 then
    left[#left + 1] = user
    redis.call('RPUSH', KEYS[2], '-' .. user)
    redis.call('EXPIRE', KEYS[2], ARGV[2])
  end
end
return left
