-- Mark a user present in a room through one member: an open stream (its
-- connection id) or an explicit heartbeat ("hb"). The member lives until its
-- expiry unless touched again. The first member of an absent user is a join.
-- KEYS[1]  presence:{room}            hash userId -> last seen (ms)
-- KEYS[2]  presence:changes:{room}    queued transitions for presence.update
-- KEYS[3]  presence:conns:{room}:<u>  zset member -> expiry (ms)
-- ARGV[1]  user id
-- ARGV[2]  member (connection id, or "hb")
-- ARGV[3]  member lifetime in ms (PRESENCE_USER_TTL_SECS)
-- ARGV[4]  key ttl in seconds (PRESENCE_HASH_TTL_SECS)
-- Returns 1 when the user joined, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[2])
redis.call('EXPIRE', KEYS[3], ARGV[4])
local joined = 0
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  joined = 1
  redis.call('RPUSH', KEYS[2], '+' .. ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
redis.call('HSET', KEYS[1], ARGV[1], now)
redis.call('EXPIRE', KEYS[1], ARGV[4])
return joined
