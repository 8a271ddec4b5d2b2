-- Register one of a user's phones: added, or refreshed when the app sends
-- its token again (at every start). A refreshed token (replaces) is the
-- same phone: it takes the replaced entry's place, with its consent, label,
-- when it was added and when the hub last sent to it. Past the most a user
-- may hold on a platform, the one registered longest ago goes. What the
-- app did not say (label, consent) stays as it was; a new device is
-- enabled.
-- KEYS[1] push:devices:{u}
-- KEYS[2] push:sent:{u}
-- ARGV[1] the device's id
-- ARGV[2] the entry: {"p","t","l"?,"e"?,"off"?,"added","at"}
-- ARGV[3] '1' when the app said the label, else '0'
-- ARGV[4] '1' when the app said enabled, else '0'
-- ARGV[5] the most a user may hold on a platform
-- ARGV[6] the id of the device this token replaces ('' none)
-- ARGV[7] how long the keys live after a registration (ms)
-- Returns {the user's devices of the platform gained (-n..1), the token of
-- each entry that left (replaced or over the most), …}: their owner keys
-- are the caller's to delete.
local key, sent, id = KEYS[1], KEYS[2], ARGV[1]
local e = cjson.decode(ARGV[2])
local most, replaces, ttl = tonumber(ARGV[5]), ARGV[6], ARGV[7]
local gained, gone = 0, {}
if replaces == id then replaces = '' end
-- One read of what the user holds: the old entry (this token's, else the
-- one it replaces) keeps what the app did not say, the platform's others
-- are ranked by when they were registered. The one registered now is the
-- newest even within one millisecond.
local held = redis.call('HGETALL', key)
local live, top, old, rep = {}, 0, nil, nil
for i = 1, #held, 2 do
  local o = cjson.decode(held[i + 1])
  if held[i] == id then
    old = o
  elseif held[i] == replaces then
    rep = o
  elseif o.p == e.p then
    live[#live + 1] = {held[i], o.at or 0, o.t}
    if (o.at or 0) > top then top = o.at end
  end
end
if rep then
  redis.call('HDEL', key, replaces)
  gained = gained - 1
  gone[#gone + 1] = rep.t
  local at = redis.call('HGET', sent, replaces)
  if at then
    redis.call('HDEL', sent, replaces)
    if not old then redis.call('HSET', sent, id, at) end
  end
elseif replaces ~= '' then
  redis.call('HDEL', sent, replaces)
end
local base = old or rep
if base then
  e.added = base.added or e.added
  if ARGV[3] ~= '1' then e.l = base.l end
  if ARGV[4] ~= '1' then e.off = base.off end
end
if not old then gained = gained + 1 end
if e.off ~= true then e.off = nil end
if e.at <= top then e.at = top + 1 end
redis.call('HSET', key, id, cjson.encode(e))
live[#live + 1] = {id, e.at, e.t}
table.sort(live, function(a, b) return a[2] < b[2] end)
for i = 1, #live - most do
  gained = gained - redis.call('HDEL', key, live[i][1])
  redis.call('HDEL', sent, live[i][1])
  gone[#gone + 1] = live[i][3]
end
redis.call('PEXPIRE', key, ttl)
if redis.call('EXISTS', sent) == 1 then redis.call('PEXPIRE', sent, ttl) end
local out = {gained}
for i = 1, #gone do out[#out + 1] = gone[i] end
return out
