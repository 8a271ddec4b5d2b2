-- Keep a user's Web Push subscription: added, or refreshed when the
-- browser sends it again. A renewed subscription (replaces: the endpoint
-- the browser had before, pushsubscriptionchange) is the same browser: it
-- takes the replaced entry's place, with its consent and when it was
-- added. Past the most a user may hold, the one sent longest ago goes.
-- Entries past their expiry go too. A refresh keeps when it was first
-- added and its consent ("off": the person turned this browser off in a
-- device list).
-- KEYS[1] push:subs:{u}
-- ARGV[1] the endpoint
-- ARGV[2] the entry: {"sub":…,"added":ms,"at":ms,"exp":ms}
-- ARGV[3] now (ms)
-- ARGV[4] the most a user may hold
-- ARGV[5] how long the key lives after a write (ms)
-- ARGV[6] the endpoint this one replaces ('' none)
-- Returns {how many subscriptions the user gained (-n..1), each endpoint
-- that left (replaced, expired, over the most), …}: their owner keys are
-- the caller's to delete.
local key, endpoint, entry = KEYS[1], ARGV[1], ARGV[2]
local now, most, ttl, replaces = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[6]
if replaces == endpoint then replaces = '' end
-- One read of what the user holds: the expired go, the rest are ranked by
-- when they were sent. The one sent now is the newest even within one
-- millisecond (its "at" past every other's), so the oldest is replaced.
local held = redis.call('HGETALL', key)
local before = #held / 2
local live, top, old, rep, gone = {}, 0, nil, nil, {}
for i = 1, #held, 2 do
  if held[i] == endpoint then
    old = cjson.decode(held[i + 1])
  else
    local o = cjson.decode(held[i + 1])
    local at = o.at or 0
    if at > top then top = at end
    if held[i] == replaces then
      rep = o
      redis.call('HDEL', key, held[i])
      gone[#gone + 1] = held[i]
    elseif o.exp and o.exp <= now then
      redis.call('HDEL', key, held[i])
      gone[#gone + 1] = held[i]
    else
      live[#live + 1] = {held[i], at}
    end
  end
end
local e = cjson.decode(entry)
local base = old or rep
if e.at <= top or base then
  e.at = math.max(e.at, top + 1)
  if base then
    e.added = base.added or base.at or e.added
    if base.off == true then e.off = true end
  end
  entry = cjson.encode(e)
end
if e.exp and e.exp <= now then
  redis.call('HDEL', key, endpoint)
  if old then gone[#gone + 1] = endpoint end
else
  redis.call('HSET', key, endpoint, entry)
  live[#live + 1] = {endpoint, e.at}
end
table.sort(live, function(a, b) return a[2] < b[2] end)
for i = 1, #live - most do
  redis.call('HDEL', key, live[i][1])
  gone[#gone + 1] = live[i][1]
end
redis.call('PEXPIRE', key, ttl)
local out = {redis.call('HLEN', key) - before}
for i = 1, #gone do out[#out + 1] = gone[i] end
return out
