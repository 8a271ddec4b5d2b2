-- Publish one coalesced presence.update built from the room's queued
-- transitions, at most one per broadcast interval (publish_lib.lua's head
-- comes first).
-- KEYS[3]  presence:changes:{room} queued transitions, "+uid" / "-uid"
-- KEYS[4]  presence:{room}         online users
-- KEYS[5]  presence:gate:{room}    exists while the broadcast interval runs
-- ARGV[8]  broadcast interval in ms (0 = one update per transition)
-- ARGV[9]  largest online list sent; above it onlineUsers is null
-- ARGV[10] presence keys' TTL in seconds (PRESENCE_HASH_TTL_SECS): how long
--          an update keeps a room's history that no backend event keeps
-- Returns {"new", id, delivered, seq, more} (more: transitions still
-- queued), {"wait", ms} (the interval still runs) or {"empty"}.

local changes_key, online_key, gate_key = KEYS[3], KEYS[4], KEYS[5]
local interval, list_max = tonumber(ARGV[8]), tonumber(ARGV[9])

local function numeric_less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end

local function json_ids(list)
  return '[' .. table.concat(list, ',') .. ']'
end

local function single(list)
  if #list == 1 then return list[1] end
  return 'null'
end

if interval > 0 then
  local wait = redis.call('PTTL', gate_key)
  if wait > 0 then return {'wait', wait} end
end
local changes
if interval > 0 then
  changes = redis.call('LRANGE', changes_key, 0, -1)
  redis.call('DEL', changes_key)
else
  local c = redis.call('LPOP', changes_key)
  changes = {}
  if c then changes[1] = c end
end
if #changes == 0 then return {'empty'} end
local joined, left = {}, {}
for _, c in ipairs(changes) do
  if string.sub(c, 1, 1) == '+' then
    joined[#joined + 1] = string.sub(c, 2)
  else
    left[#left + 1] = string.sub(c, 2)
  end
end
local count = redis.call('HLEN', online_key)
local online = 'null'
if count <= list_max then
  local users = redis.call('HKEYS', online_key)
  table.sort(users, numeric_less)
  online = json_ids(users)
end
if interval > 0 then
  redis.call('SET', gate_key, '1', 'PX', interval)
end
local data = '{"onlineUsers":' .. online .. ',"joined":' .. single(joined) ..
  ',"left":' .. single(left) .. ',"count":' .. count ..
  ',"joinedUsers":' .. json_ids(joined) .. ',"leftUsers":' .. json_ids(left) .. '}'

local id, seq, delivered = publish(data, '', '', ARGV[10])
return {'new', id, delivered, seq, redis.call('LLEN', changes_key)}
