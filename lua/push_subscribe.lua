-- Keep a user's Web Push subscription: added, or refreshed when the
-- browser sends it again. Past the most a user may hold, the one sent
-- longest ago goes. Entries past their expiry go too. A refresh keeps
-- when it was first added and its consent ("off": the person turned this
-- browser off in a device list).
-- KEYS[1] push:subs:{u}
-- ARGV[1] the endpoint
-- ARGV[2] the entry: {"sub":…,"added":ms,"at":ms,"exp":ms}
-- ARGV[3] now (ms)
-- ARGV[4] the most a user may hold
-- ARGV[5] how long the key lives after a write (ms)
-- Returns how many subscriptions the user gained (-n..1).
local key, endpoint, entry = KEYS[1], ARGV[1], ARGV[2]
local now, most, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
-- One read of what the user holds: the expired go, the rest are ranked by
-- when they were sent. The one sent now is the newest even within one
-- millisecond (its "at" past every other's), so the oldest is replaced.
local held = redis.call('HGETALL', key)
local before = #held / 2
local live, top, old = {}, 0, nil
for i = 1, #held, 2 do
  if held[i] == endpoint then
    old = cjson.decode(held[i + 1])
  else
    local o = cjson.decode(held[i + 1])
    local at = o.at or 0
    if at > top then top = at end
    if o.exp and o.exp <= now then
      redis.call('HDEL', key, held[i])
    else
      live[#live + 1] = {held[i], at}
    end
  end
end
local e = cjson.decode(entry)
if e.at <= top or old then
  e.at = math.max(e.at, top + 1)
  if old then
    e.added = old.added or e.added
    if old.off == true then e.off = true end
  end
  entry = cjson.encode(e)
end
if e.exp and e.exp <= now then
  redis.call('HDEL', key, endpoint)
else
  redis.call('HSET', key, endpoint, entry)
  live[#live + 1] = {endpoint, e.at}
end
table.sort(live, function(a, b) return a[2] < b[2] end)
for i = 1, #live - most do
  redis.call('HDEL', key, live[i][1])
end
redis.call('PEXPIRE', key, ttl)
return redis.call('HLEN', key) - before
