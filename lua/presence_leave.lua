-- Remove a member (a closing stream), expired heartbeats and the members of
-- dead instances, and report the users left with none: each such user leaves
-- once (HDEL tells), queued as a transition for presence.update. Used on
-- stream close (one user, its member) and by the sweeper and the presence
-- list (many users, no member, the dead instances).
-- KEYS[1]     presence:{room}            hash userId -> last seen (ms)
-- KEYS[2]     presence:changes:{room}    queued transitions
-- KEYS[3..n]  presence:conns:{room}:<u>  one zset per user, in ARGV order
-- ARGV[1]     member to remove ("" for none)
-- ARGV[2]     key ttl in seconds
-- ARGV[3]     dead instances' ids, comma separated ("" for none): a
--             stream's member is "<instance>.<connection>", scored +inf
-- ARGV[4..n]  user ids
-- Returns the user ids that left.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead, anyDead = id_set(ARGV[3])
local left = {}
for i = 3, #KEYS do
  local conns, user = KEYS[i], ARGV[i + 1]
  if ARGV[1] ~= '' then
    redis.call('ZREM', conns, ARGV[1])
  end
  redis.call('ZREMRANGEBYSCORE', conns, '-inf', now)
  if anyDead then
    for _, m in ipairs(of_dead(redis.call('ZRANGEBYSCORE', conns, '+inf', '+inf'), dead)) do
      redis.call('ZREM', conns, m)
    end
  end
  if redis.call('ZCARD', conns) == 0 and redis.call('HDEL', KEYS[1], user) == 1 then
    left[#left + 1] = user
    redis.call('RPUSH', KEYS[2], '-' .. user)
    redis.call('EXPIRE', KEYS[2], ARGV[2])
  end
end
return left
