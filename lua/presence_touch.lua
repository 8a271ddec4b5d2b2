-- Mark a user present in a room through one or more members: open streams
-- (their connection ids) or an explicit heartbeat ("hb"). A member lives
-- until its expiry unless touched again. The first member of an absent user
-- is a join. The clock refreshes all of a user's streams in a room on one
-- instance with one call.
-- KEYS[1]  presence:{room}            hash userId -> last seen (ms)
-- KEYS[2]  presence:changes:{room}    queued transitions for presence.update
-- KEYS[3]  presence:conns:{room}:<u>  zset member -> expiry (ms)
-- KEYS[4]  room:events:{room}, KEYS[5] room:seq:{room}: a room whose history
--          only presence keeps (its TTL at most ARGV[3]) lives while someone
--          is present
-- ARGV[1]  user id
-- ARGV[2]  member lifetime in ms (PRESENCE_USER_TTL_SECS)
-- ARGV[3]  key ttl in seconds (PRESENCE_HASH_TTL_SECS)
-- ARGV[4…] members (connection ids, or "hb")
-- Returns 1 when the user joined, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = now + tonumber(ARGV[2])
local scored = {} -- expiry, member, expiry, member, …
for i = 4, #ARGV do
  scored[#scored + 1] = expiry
  scored[#scored + 1] = ARGV[i]
end
redis.call('ZADD', KEYS[3], unpack(scored))
redis.call('EXPIRE', KEYS[3], ARGV[3])
local joined = 0
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  joined = 1
  redis.call('RPUSH', KEYS[2], '+' .. ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
end
redis.call('HSET', KEYS[1], ARGV[1], now)
redis.call('EXPIRE', KEYS[1], ARGV[3])
local left = redis.call('TTL', KEYS[4])
if left >= 0 and left <= tonumber(ARGV[3]) then
  redis.call('EXPIRE', KEYS[4], ARGV[3])
  redis.call('EXPIRE', KEYS[5], ARGV[3])
end
return joined
