-- Change the state of a user's items, one (a PATCH or DELETE of one item) or
-- many (bulk actions and read-all: listed ids, or every item that passes a
-- filter up to an item). What changed goes to the user's log as one event
-- per kind (notification.read, .updated, .deleted), with the counts; reads
-- also go to the write-behind buffer. Repeating an action changes nothing.
-- KEYS and ARGV[1..8]: see inbox_lib.lua.
-- ARGV[9]  read, seen, archive, unarchive, snooze, unsnooze or delete
-- ARGV[10]  "one", "ids" or "filter"
-- ARGV[11]  one: the notificationId; ids: comma list
-- ARGV[12..16] filter (see filter_at)
-- ARGV[17] filter: upTo (inclusive), a notificationId, or ""
-- ARGV[18] filter: the score used when upTo is no longer listed
-- ARGV[19] snooze: until, in ms
-- ARGV[20] filter: its JSON, for notification.updated when over 100 changed
-- ARGV[21] filter: the call's signature (action, filter, upTo): a call with
--          the signature of the last one that left items over goes on
--          where it left off (inbox:groups "b"), so repeats change no item
--          twice and never look at the same items again
-- ARGV[22] filter: the most items this script looks at
-- ARGV[23] filter: how long, in ms, where a call left off is kept
-- Returns one: {"missing"}, {"deleted"} or {"ok", item JSON or "", changed
-- 0/1}; ids: {changed, counts JSON}; filter: {changed, counts JSON, 1 when
-- items are left over (the caller repeats the call) else 0, items looked at}.
settle()
local action, target = ARGV[9], ARGV[10]

local function mark_seen(id)
  redis.call('HSETNX', K_SEEN, id, NOW_ISO)
end

-- apply does action to item id, which exists; it reports whether anything changed.
local function apply(id)
  local archived, snoozed, read, seen = flags(id)
  if action == 'delete' then
    remove(id, 'deleted')
    return true
  end
  if action == 'unsnooze' then
    if not snoozed then return false end
    wake(id)
    return true
  end
  local until_ms = tonumber(ARGV[19])
  if (action == 'read' and read) or (action == 'seen' and seen) or (action == 'archive' and archived) or
      (action == 'unarchive' and not archived) or
      (action == 'snooze' and tonumber(redis.call('ZSCORE', K_DUE, 's:' .. id) or '-1') == until_ms) then
    return false
  end
  contrib(id, -1)
  if action == 'read' then
    redis.call('HSET', K_READ, id, NOW_ISO)
    redis.call('HSET', K_PENDING, id, NOW_ISO)
    mark_seen(id)
    read_ids[#read_ids + 1] = id
  elseif action == 'seen' then
    mark_seen(id)
  elseif action == 'archive' then
    redis.call('HSET', K_ARCHIVED, id, NOW_ISO)
    redis.call('ZREM', K_DUE, 's:' .. id)
    mark_seen(id)
  elseif action == 'unarchive' then
    redis.call('HDEL', K_ARCHIVED, id)
  elseif action == 'snooze' then
    redis.call('HDEL', K_ARCHIVED, id)
    redis.call('ZADD', K_DUE, until_ms, 's:' .. id)
    mark_seen(id)
  end
  contrib(id, 1)
  if action ~= 'read' then updated[#updated + 1] = id end
  dirty = true
  return true
end

if target == 'one' then
  local id = ARGV[11]
  if redis.call('HEXISTS', K_ITEMS, id) == 0 then
    finish()
    if redis.call('ZSCORE', K_DELETED, id) then return {'deleted'} end
    return {'missing'}
  end
  local changed = apply(id)
  finish(action)
  return {'ok', item_json(id) or '', changed and 1 or 0}
end

local ids = {}
if target == 'ids' then
  for id in string.gmatch(ARGV[11], '[^,]+') do
    if redis.call('HEXISTS', K_ITEMS, id) == 1 then ids[#ids + 1] = id end
  end
  local changed = 0
  for _, id in ipairs(ids) do
    if apply(id) then changed = changed + 1 end
  end
  finish(action, ARGV[20])
  return {changed, counts_json()}
end

-- A filter: the items from upTo (or the top) down, at most LOOK of them.
-- Earlier calls with this signature covered the scores (lo, hi]: this one
-- looks first above hi (items that arrived since), then below lo.
local sig, look, keep_ms = ARGV[21], tonumber(ARGV[22]), tonumber(ARGV[23])
local f, start = filter_at(12), bound_of(ARGV[17], ARGV[18], false)
local hi, lo
local saved = redis.call('HGET', K_GROUPS, 'b')
if saved then
  local s, h, l, exp = string.match(saved, '^(.*)\n([^\n]+)\n([^\n]+)\n(%d+)$')
  if s == sig and tonumber(exp) > NOW then hi, lo = h, l end
end
local looked, done
if hi then
  local n, above_done, first = walk(f, start, '(' .. hi, look, ids)
  looked, done = n, false
  if above_done then
    if first then hi = first end
    local m, below_done, _, last = walk(f, '(' .. lo, '-inf', look - n, ids)
    looked, done = n + m, below_done
    if last then lo = last end
  end
else
  local first, last
  looked, done, first, last = walk(f, start, '-inf', look, ids)
  hi, lo = first, last
end
if done or not hi then
  if saved then redis.call('HDEL', K_GROUPS, 'b') end
else
  redis.call('HSET', K_GROUPS, 'b', sig .. '\n' .. hi .. '\n' .. lo .. '\n' .. (NOW + keep_ms))
end
local changed = 0
for _, id in ipairs(ids) do
  if apply(id) then changed = changed + 1 end
end
finish(action, ARGV[20])
return {changed, counts_json(), (done or not hi) and 0 or 1, looked}
