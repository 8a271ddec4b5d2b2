-- Renew this hub instance's lease in the registry of instances, and read the
-- registry: an open stream's presence lives as long as its instance's lease
-- (see hub/instances.go), so one call per instance per period stands for all
-- its streams.
-- KEYS[1]  presence:instances  zset instance id -> lease end (ms, Redis time)
-- ARGV[1]  this instance's id
-- ARGV[2]  lease in ms ("0": end it now, the instance is closing; "": only
--          read the registry, as the sweep does)
-- ARGV[3]  instances whose lease ended longer ago than this (ms) are forgotten
-- Returns {1 when this instance's lease had lapsed or was never taken else
-- 0 (always 0 when only reading), the lowest version among the instances
-- whose lease lives (an id "v<N>-…" is version N's, another one 0's; -1
-- when none lives), then the ids of the instances whose lease has ended}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = 0
if ARGV[2] ~= '' then
  local prev = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
  if prev == nil or prev < now then
    lapsed = 1
  end
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - tonumber(ARGV[3])))
end
local lowest = -1
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')) do
  local v = tonumber(string.match(id, '^v(%d+)%-') or '0')
  if lowest < 0 or v < lowest then lowest = v end
end
local out = {tostring(lapsed), tostring(lowest)}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  out[#out + 1] = id
end
return out
