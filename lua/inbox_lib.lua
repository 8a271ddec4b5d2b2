-- Shared head of every inbox script (lua.go joins it in front of each,
-- behind inbox_item.lua and inbox_frame.lua). One user's keys share the hash tag {user}, so a
-- script may touch them together.
-- Every change of a user's inbox is one script, and the counts change in the
-- script that changes what they count: they are exact, never recounted on
-- the way, except once after data written by an older hub (see ensure).
-- KEYS[1..8]  the user's items (inbox_item.lua, joined in front of this)
-- KEYS[9]  unread_count:{u}   string, the number of visible unread items
-- KEYS[10] inbox:log:{u}     hash  seq -> an entry of the user's log (inbox_log.lua)
-- KEYS[11] user:seq:{u}       an older hub's log seq, where this log's numbering goes on (read once)
-- KEYS[12] read_status:{u}    hash  id -> readAt (write-behind buffer)
-- KEYS[13] settings:muted:{u} set of muted event types
-- KEYS[14] inbox:counts:{u}   hash  the counts (see bump), "v" the version, "kept" (see keep),
--                                  "top" the highest score given (see top_score), "q" and
--                                  "lm" the log's last seq and ms (inbox_log.lua)
-- KEYS[15] inbox:deleted:{u}  zset  ids that must not come back, scored by when (ms):
--                                  deleted, expired, or joined into a group
-- KEYS[16] user:log:{u}       an older hub's log stream, dropped when this log starts
-- ARGV: as inbox_frame.lua (joined in front of this) lists them.

-- A script may serve several users (inbox_add.lua: a batch of recipients):
-- their keys follow each other, STRIDE each, and use(i, channel) makes the
-- i-th user's (from 0) the current ones.
local K_UNREAD, K_LOG, K_OLDSEQ, K_PENDING, K_MUTED, K_COUNTS, K_DELETED, K_OLDLOG
local CHANNEL
-- What the current user's script changed, for its log events (see finish).
local dirty, removed, updated, read_ids
local UNREAD -- the unread count finish left
local kept_now -- keep (inbox_log.lua) ran for the current user: a log it makes later takes the expiry too
-- The current user's counts, read once (load_counts) and changed in memory;
-- flush_counts writes what changed. C_reset: rewrite them all (a recount).
local C, C_dirty, C_reset
-- C_extra: fields written with the counts on their next flush (a small
-- inbox's log entries, inbox_log.lua): field, value, …
local C_extra
local C_unread -- the unread count unread_count holds as far as this script knows (see flush_counts)
local C_grouped -- whether C holds a count by tag or severity ("t:…", "s:…")

-- SMALL: the current user's inbox is small, so it is three keys: inbox:{u}
-- (the items, each with its score: inbox_item.lua), inbox:counts:{u} (the
-- counts by short names, "k" among them saying it is small, and the log's entries as "~<seq>",
-- inbox_log.lua) and unread_count; no inbox:order, no inbox:log. An inbox
-- is made small when this version may (ARGV[8]) and grows out of it
-- (inbox_order.lua's grow) past SMALL_ITEMS items or SMALL_LOG entries, or
-- with a count by tag or severity; else, as older hubs keep one, its order
-- is inbox:order and its log inbox:log. Set by load_counts.
local SMALL
local SHORT = {} -- a small inbox's count -> its field (inbox_frame.lua)
for i, name in ipairs(SMALL_NAMES) do SHORT[name] = SMALL_FIELDS[i] end
local MAY_SMALL = ARGV[8] ~= ''
local ORDER -- a small inbox's items, newest first ({id, score}), read once (inbox_order.lua)
-- FRESH: the current user's inbox had neither counts nor items (load_counts,
-- ensure): this script makes it
local FRESH

-- FANOUT: this is the fan-out's script (inbox_add.lua), which only adds:
-- it renews the keys' expiry once a period (keep, inbox_log.lua), and when
-- it may make a key, where every other change renews it; and it leaves an
-- older hub's order in a small inbox to the next other script.
local FANOUT = false

-- STRIDE is how many keys each user has in KEYS: 16, more when a script
-- takes some of its own after them (inbox_add.lua with deliveries: 18).
local STRIDE = 16

local function use(i, channel)
  local b = i * STRIDE
  use_items(b)
  K_UNREAD, K_LOG, K_OLDSEQ, K_PENDING, K_MUTED, K_COUNTS, K_DELETED, K_OLDLOG =
    KEYS[b + 9], KEYS[b + 10], KEYS[b + 11], KEYS[b + 12], KEYS[b + 13], KEYS[b + 14], KEYS[b + 15], KEYS[b + 16]
  CHANNEL = channel
  dirty = false
  removed = {}   -- reason -> ids
  updated = {}   -- ids of items whose state changed (seen, archived, woken, …)
  read_ids = {}  -- ids marked read
  C, ORDER, FRESH = nil, nil, false
  kept_now = false
end
use(0, ARGV[4])

-- call_chunked calls cmd on key with args, at most 1,000 of them a call
-- (an even number: field, value pairs stay whole): unpack fails past a few
-- thousand values, and an inbox may count thousands of tags.
local function call_chunked(cmd, key, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
  end
end

-- is_item: whether a field of inbox:{u} is an item (a notificationId starts
-- with its room id).
local function is_item(field)
  local b = string.byte(field, 1)
  return b and b >= 48 and b <= 57
end

-- order_all is a small inbox's items, newest first: {{id, score, the rest
-- of its value}, …}.
local function order_all()
  if ORDER then return ORDER end
  ORDER = {}
  local all = redis.call('HGETALL', K_ITEMS)
  for i = 1, #all, 2 do
    local off, rest
    if is_item(all[i]) then off, rest = string.match(all[i + 1], '^(%-?%d+)(.*)$') end
    if off then ORDER[#ORDER + 1] = {all[i], id_score(all[i]) + tonumber(off), rest} end
  end
  table.sort(ORDER, function(a, b) return a[2] > b[2] end)
  return ORDER
end

-- make_large makes the current (small) inbox large: its order goes to
-- inbox:order, its log's entries to inbox:log, its counts by their names
-- (a rewrite), and keep gives the new keys their expiry. Bounded: a small
-- inbox is small.
local function make_large()
  local z, values, moved, gone = {}, {}, {}, {}
  for _, item in ipairs(order_all()) do
    z[#z + 1] = string.format('%.0f', item[2])
    z[#z + 1] = item[1]
    values[#values + 1] = item[1]
    values[#values + 1] = item[3]
  end
  call_chunked('ZADD', K_ORDER, z)
  call_chunked('HSET', K_ITEMS, values)
  -- the log's entries: those written, and those this script has not yet
  local all = redis.call('HGETALL', K_COUNTS)
  for _, x in ipairs(C_extra) do all[#all + 1] = x end
  C_extra = {}
  for i = 1, #all, 2 do
    if string.byte(all[i], 1) == 126 then -- "~<seq>"
      moved[#moved + 1] = string.sub(all[i], 2)
      moved[#moved + 1] = all[i + 1]
      gone[#gone + 1] = all[i]
    end
  end
  call_chunked('HSET', K_LOG, moved)
  call_chunked('HDEL', K_COUNTS, gone)
  SMALL, ORDER, C_reset, C.kept = false, nil, true, nil
end

local function load_counts()
  if C then return end
  C, C_dirty, C_reset, C_grouped, C_extra = {}, {}, false, false, {}
  local small = redis.call('HMGET', K_COUNTS, unpack(SMALL_FIELDS))
  SMALL = small[1] ~= false -- "k": a small inbox's counts are kept (keep) from the first change
  if SMALL then
    for i, name in ipairs(SMALL_NAMES) do
      if small[i] then C[name] = tonumber(small[i]) end
    end
    -- an older hub, which knows no small inbox, added to it: its order is
    -- the sorted set it made, where this one's items join it (see FANOUT)
    if not FANOUT and redis.call('EXISTS', K_ORDER) == 1 then make_large() end
  else
    -- without a version there are no counts: v is in the first write of
    -- any change, by every version
    local all = {}
    if small[2] then all = redis.call('HGETALL', K_COUNTS) end
    for i = 1, #all, 2 do
      C[all[i]] = tonumber(all[i + 1]) or 0
      if string.byte(all[i], 2) == 58 then C_grouped = true end
    end
    -- a new inbox: neither counts nor an order (an older hub's) are there
    if #all == 0 and redis.call('EXISTS', K_ORDER) == 0 then
      FRESH, SMALL = true, MAY_SMALL
    end
  end
  C_unread = C.unread or 0
end

-- bump adds by to one count (in memory until flush_counts); a count that
-- reaches 0 is dropped then, so that a tag or severity is listed exactly
-- while something counts for it.
local function bump(field, by)
  load_counts()
  if not C_grouped and string.byte(field, 2) == 58 then C_grouped = true end
  C[field] = (C[field] or 0) + by
  C_dirty[field] = true
end

-- what_counts lists what an item in this state counts for, besides its
-- severity and tags: visible, unread, unseen (visible items), archived,
-- snoozed.
local NEW_ITEM = {'visible', 'unread', 'unseen'} -- what a new item counts for
local function what_counts(archived, snoozed, read, seen)
  if archived then return {'archived'} end
  if snoozed then return {'snoozed'} end
  local what = {'visible'}
  if not read then what[#what + 1] = 'unread' end
  if not seen then what[#what + 1] = 'unseen' end
  return what
end

-- add_counts adds (sign 1) or takes back (sign -1) what an item of this
-- severity, tags and state counts for. Per severity and tag the counts are
-- "s:<sev>:<what>" and "t:<tag>:<what>" for visible, unread, unseen and
-- archived; severity normal is not stored: it is the rest of the totals.
local function add_counts(sev, tags, what, sign)
  for _, w in ipairs(what) do
    bump(w, sign)
    if w ~= 'snoozed' then
      if sev ~= 'normal' then bump('s:' .. sev .. ':' .. w, sign) end
      for _, tag in ipairs(tags) do bump('t:' .. tag .. ':' .. w, sign) end
    end
  end
end

-- contrib adds (sign 1) or takes back (sign -1) what item id counts for, as
-- it is now. Every change is contrib(id, -1), the change, contrib(id, 1).
local function contrib(id, sign)
  local sev, tags = meta(id)
  add_counts(sev, tags, what_counts(flags(id)), sign)
end

local function count(field)
  load_counts()
  local v = C[field] or 0
  if v < 0 then return 0 end
  return v
end

-- field is the field count k is kept in, nil when not kept (a small inbox's lm).
local function field(k)
  if SMALL then return SHORT[k] end
  return k
end

-- flush_counts writes the counts that changed (all of them after a
-- recount), dropping those at 0, and unread_count with them: set after a
-- recount, else moved by the change (INCRBY), so that a change an older hub
-- made to it alone still shows as a difference (see ensure).
local function flush_counts()
  if not C then return end
  if C_reset then
    -- a small inbox's counts hold its log too
    if SMALL then redis.call('HDEL', K_COUNTS, unpack(SMALL_FIELDS)) else redis.call('DEL', K_COUNTS) end
    local args = {}
    for k, v in pairs(C) do
      local f = field(k)
      if v <= 0 then
        C[k] = nil
      elseif f then
        args[#args + 1] = f; args[#args + 1] = v
      end
    end
    for _, x in ipairs(C_extra) do args[#args + 1] = x end
    call_chunked('HSET', K_COUNTS, args)
    C_unread = count('unread')
    redis.call('SET', K_UNREAD, C_unread)
  elseif next(C_dirty) or #C_extra > 0 then
    local set, del = {}, {}
    for _, x in ipairs(C_extra) do set[#set + 1] = x end
    for k in pairs(C_dirty) do
      local v, f = C[k], field(k)
      if not v or v <= 0 then
        C[k] = nil
        if f then del[#del + 1] = f end
      elseif f then
        set[#set + 1] = f; set[#set + 1] = v
      end
    end
    call_chunked('HSET', K_COUNTS, set)
    call_chunked('HDEL', K_COUNTS, del)
    local unread = C.unread or 0
    if unread ~= C_unread then
      redis.call('INCRBY', K_UNREAD, unread - C_unread)
      C_unread = unread
    end
  end
  C_dirty, C_reset, C_extra = {}, false, {}
end

-- counts_json is the counts as GET /notifications/counts answers them.
local function counts_json()
  load_counts()
  if not C_grouped then -- the common case: no tags, no severity but normal
    return plain_counts_json(C.v or 0, C.visible or 0, C.unread or 0, C.unseen or 0, C.archived or 0, C.snoozed or 0)
  end
  local c, groups = {}, {t = {}, s = {}}
  for k, v in pairs(C) do
    if v > 0 then
      local kind, name, w
      if string.byte(k, 2) == 58 then kind, name, w = string.match(k, '^([ts]):(.*):(%a+)$') end -- "t:…", "s:…"
      if kind then
        groups[kind][name] = groups[kind][name] or {}
        groups[kind][name][w] = v
      else
        c[k] = v
      end
    end
  end
  -- severity normal is the rest of the totals
  local normal = {}
  for _, w in ipairs({'visible', 'unread', 'unseen', 'archived'}) do
    local rest = tonumber(c[w] or '0')
    for _, x in pairs(groups.s) do rest = rest - tonumber(x[w] or '0') end
    if rest > 0 then normal[w] = rest end
  end
  if next(normal) then groups.s.normal = normal end
  local function obj(m)
    local names = {}
    for k in pairs(m) do names[#names + 1] = k end
    table.sort(names)
    local parts = {}
    for _, k in ipairs(names) do
      local x = m[k]
      parts[#parts + 1] = '"' .. k .. '":{"visible":' .. (x.visible or 0) .. ',"unread":' ..
        (x.unread or 0) .. ',"unseen":' .. (x.unseen or 0) .. '}'
    end
    return '{' .. table.concat(parts, ',') .. '}'
  end
  return '{"version":' .. (c.v or 0) .. ',"visible":' .. (c.visible or 0) .. ',"unread":' .. (c.unread or 0) ..
    ',"unseen":' .. (c.unseen or 0) .. ',"archived":' .. (c.archived or 0) .. ',"snoozed":' .. (c.snoozed or 0) ..
    ',"byTag":' .. obj(groups.t) .. ',"bySeverity":' .. obj(groups.s) .. '}'
end

local function put_group(id, g)
  redis.call('HSET', K_GROUPS, 'g:' .. id, g.first_ms .. '\t' .. g.count .. '\t' .. table.concat(g.actors, ',') ..
    '\t' .. g.first .. '\t' .. g.key)
end
