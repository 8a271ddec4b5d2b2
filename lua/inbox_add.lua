-- Add one notification to the inboxes of a batch of recipients, exactly
-- once each: a muted type is skipped; an id already there, or deleted or
-- expired before, is a duplicate (a retry); a new one is counted and goes to
-- that user's log and channel as notification.created. This is the
-- fan-out's path: it reads nothing it can know (a new item's state), and it
-- leaves what is due by time (retention age, expiry, wakes) to the next
-- script that reads the inbox and to the timer worker.
-- KEYS: 16 per recipient, as inbox_item.lua and inbox_lib.lua list them, one
-- recipient after the other (on a cluster, a batch is one recipient: their
-- keys share a slot); with deliveries (ARGV[20]) two more each, as
-- delivery_schedule.lua lists them.
-- ARGV[1..8]: see inbox_lib.lua (ARGV[4] unused: the channels follow).
-- ARGV[9]  notificationId
-- ARGV[10] event type
-- ARGV[11] the item's own JSON: {"notificationId",…,"timestamp"}
-- ARGV[12] the event's time in ms (its stream id's ms)
-- ARGV[13] severity
-- ARGV[14] tags, comma separated
-- ARGV[15] expiresAt (RFC 3339) or ""
-- ARGV[16] expiresAt in ms, or ""
-- ARGV[17] groupKey, or "": the event joins the recipient's open group of
--          the key (the newest item with it that is unread, visible and
--          younger than the window, counted from the group's first event),
--          else starts one
-- ARGV[18] the group window in ms
-- ARGV[19] publisher id, or "" (a group's actors)
-- ARGV[20..24] the deliveries beyond the tab to schedule (delivery_schedule.lua)
-- ARGV[25..] each recipient's channel, user:{u}, in the order of KEYS
-- Returns one of "muted", "dup", "old" (older than the retention), "new" or
-- "joined" per recipient; with deliveries, then per recipient the earliest
-- due time (ms) of this notification's deliveries, or "" when none is due.
local id, typ, own, ms = ARGV[9], ARGV[10], ARGV[11], tonumber(ARGV[12])
local sev, tag_list, exp, exp_ms = ARGV[13], ARGV[14], ARGV[15], ARGV[16]
local gkey, window, publisher = ARGV[17], tonumber(ARGV[18]), ARGV[19]
-- value is what an item of this event holds in inbox:{u} (inbox_item.lua):
-- nothing but a reference when the body is kept once
local value, joined = own, nil
if ARGV[8] == '2' then value, joined = '', '\t' .. id end
local tags = split(tag_list)
local with_meta = sev ~= 'normal' or #tags > 0 or exp ~= ''
local quoted = {}
for i, tag in ipairs(tags) do quoted[i] = '"' .. tag .. '"' end
local expires = 'null'
if exp ~= '' then expires = quote(exp) end
local head = item_head(own, sev, table.concat(quoted, ','), expires)

-- join makes the event the newest of group item gid: the item keeps its
-- notificationId, takes the event's own fields, moves to the top, becomes
-- unseen, and counts once; the event's id is remembered (a retry is a
-- duplicate).
local function join(gid, g)
  contrib(gid, -1)
  order_set(gid, top_score(ms), joined or ('{"notificationId":"' .. gid .. '"' .. string.sub(own, #id + 21)))
  if with_meta then
    redis.call('HSET', K_META, gid, sev .. '\t' .. tag_list .. '\t' .. exp)
  else
    redis.call('HDEL', K_META, gid)
  end
  redis.call('ZREM', K_DUE, 'x:' .. gid)
  if exp_ms ~= '' then redis.call('ZADD', K_DUE, exp_ms, 'x:' .. gid) end
  redis.call('HDEL', K_SEEN, gid)
  g.count = g.count + 1
  if publisher ~= '' then
    local actors = {publisher}
    for _, a in ipairs(g.actors) do
      if a ~= publisher and #actors < 5 then actors[#actors + 1] = a end
    end
    g.actors = actors
  end
  put_group(gid, g)
  tombstone(id)
  contrib(gid, 1)
  updated[#updated + 1] = gid
  dirty = true
  finish('group')
  return 'joined'
end

-- open_group returns the recipient's open group item of gkey, and its record.
local function open_group()
  local gid = redis.call('HGET', K_GROUPS, 'k:' .. gkey)
  if not gid then return nil end
  local g = group_of(gid)
  if not g or ms - g.first_ms >= window then return nil end
  local archived, snoozed, read = flags(gid)
  if archived or snoozed or read then return nil end
  return gid, g
end

local function add_item()
  local items = ensure(true)
  -- keys this add may make: the inbox's own when it was empty, those of
  -- tags, severity, expiry and groups; they take their expiry now (keep)
  if items == 0 or with_meta or gkey ~= '' then C.kept = nil end
  -- a small inbox counts by neither tag nor severity, and stays small
  if sev ~= 'normal' or #tags > 0 or items >= SMALL_ITEMS then grow() end
  if gkey ~= '' then
    if redis.call('ZSCORE', K_DELETED, id) or redis.call('HEXISTS', K_ITEMS, id) == 1 then return 'dup', '' end
    local gid, g = open_group()
    if gid then return join(gid, g), gid end
    redis.call('HSET', K_ITEMS, id, value)
    local actors = {}
    if publisher ~= '' then actors = {publisher} end
    put_group(id, {first_ms = ms, count = 1, actors = actors, first = id, key = gkey})
    redis.call('HSET', K_GROUPS, 'k:' .. gkey, id)
  elseif redis.call('ZSCORE', K_DELETED, id) then
    return 'dup', ''
  end
  local top, top_dirty = C.top, C_dirty.top
  local score = top_score(ms)
  if gkey == '' and not order_new(id, score, value) then
    C.top, C_dirty.top = top, top_dirty -- a retry: nothing changes
    return 'dup', ''
  elseif gkey ~= '' then
    order_set(id, score, SMALL and value or nil)
  end
  if with_meta then redis.call('HSET', K_META, id, sev .. '\t' .. tag_list .. '\t' .. exp) end
  if exp_ms ~= '' then redis.call('ZADD', K_DUE, exp_ms, 'x:' .. id) end
  add_counts(sev, tags, NEW_ITEM, 1)
  dirty = true
  trim(items + 1, true)
  -- older than every item of a full inbox: it went at once
  if removed.retention and removed.retention[#removed.retention] == id then
    finish()
    return 'old', ''
  end
  finish(nil, nil, function()
    local group = 'null'
    if gkey ~= '' then group = group_json(group_of(id)) end
    log('notification.created', 'c\t' .. id, created_data(head, group, score, UNREAD, counts_json()))
  end)
  return 'new', id
end

local function add()
  if redis.call('SISMEMBER', K_MUTED, typ) == 1 then return 'muted', '' end
  if ms < NOW - RETENTION then return 'old', '' end
  return add_item()
end

FANOUT = true -- see inbox_lib.lua
fresh_keys = function()
  local keys = {}
  if with_meta then keys[#keys + 1] = K_META end
  if exp_ms ~= '' then keys[#keys + 1] = K_DUE end
  if gkey ~= '' then keys[#keys + 1] = K_GROUPS end
  return keys
end

-- The body, kept once for every item that shows it: as long as the
-- retention and a day from its last add, longer than any item of it lives
-- unless it is woken (wake renews it).
if value == '' then redis.call('SET', BODIES .. id, own, 'EX', BODY_SECS) end

-- Deliveries beyond the tab (delivery_schedule.lua, joined in front).
local plan = schedule_plan(20)
if plan then STRIDE = 18 end
local ev = {id = id, typ = typ, ms = ms, critical = sev == 'critical' and 1 or 0, own = own, now = NOW}

local out, dues = {}, {}
for i = 0, #KEYS / STRIDE - 1 do
  use(i, ARGV[25 + i])
  local kind, target = add()
  flush_counts() -- a recount on a duplicate
  out[#out + 1] = kind
  if plan then
    dues[#dues + 1] = schedule(KEYS[i * STRIDE + 17], KEYS[i * STRIDE + 18], ev, kind, target)
  end
end
for _, d in ipairs(dues) do out[#out + 1] = d end
return out
