-- Note that a room may hold outbox entries: its score becomes Redis' time, so
-- the sweep leaves a room alone while a publish may be under way there.
-- KEYS[1]  outbox:rooms   zset room -> last touch (ms, Redis time)
-- ARGV[1]  room id
local t = redis.call('TIME')
return redis.call('ZADD', KEYS[1], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), ARGV[1])
