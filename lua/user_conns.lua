-- Register a user's new stream and enforce the per-user connection cap across
-- all hub instances: beyond the cap the oldest streams are evicted, and every
-- instance hears it on the control channel.
-- KEYS[1]  user:conns:{user}   zset connection id -> opened at (ms, Redis time)
-- KEYS[2]  user:online:{user}  zset connection id -> +inf: the stream counts
--                              while its instance's lease lives (delivery's
--                              onlyIfOffline; hub/instances.go)
-- ARGV[1]  connection id
-- ARGV[2]  cap (0 = no cap)
-- ARGV[3]  key ttl in seconds
-- ARGV[4]  control channel
-- ARGV[5]  dead hub instances' ids, comma separated: their streams
--          ("<instance>.<connection>") are forgotten here
-- Returns the evicted connection ids.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) -- leases of an older hub
local dead, anyDead = id_set(ARGV[5])
if anyDead then
  for _, m in ipairs(of_dead(redis.call('ZRANGE', KEYS[1], 0, -1), dead)) do
    redis.call('ZREM', KEYS[1], m)
    redis.call('ZREM', KEYS[2], m)
  end
end
redis.call('ZADD', KEYS[2], '+inf', ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[3])
local cap = tonumber(ARGV[2])
local evicted = {}
if cap > 0 then
  local extra = redis.call('ZCARD', KEYS[1]) - cap
  if extra > 0 then
    -- The oldest, never the stream being opened (it may share a millisecond).
    for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, extra)) do
      if m ~= ARGV[1] and #evicted < extra then
        evicted[#evicted + 1] = m
        redis.call('ZREM', KEYS[1], m)
        redis.call('ZREM', KEYS[2], m)
      end
    end
    redis.call('PUBLISH', ARGV[4], '{"evict":["' .. table.concat(evicted, '","') .. '"]}')
  end
end
return evicted
