-- Shared head of every inbox script (lua.go joins it in front of each,
-- behind inbox_item.lua). One user's keys share the hash tag {user}, so a
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
-- ARGV[1]  retention in ms (items whose activity is older drop out)
-- ARGV[2]  largest number of items kept
-- ARGV[3]  how many entries the user's log keeps: the user stream resumes this far back
-- ARGV[4]  the user's channel, user:{u}
-- ARGV[5]  "1" to SPUBLISH (cluster), else PUBLISH
-- ARGV[6]  now, RFC 3339 (the hub's clock): the time of what this script does
-- ARGV[7]  where the events' bodies are kept, a key prefix (inbox_item.lua's BODIES)
-- ARGV[8..] the script's own

-- A script may serve several users (inbox_add.lua: a batch of recipients):
-- their keys follow each other, STRIDE each, and use(i, channel) makes the
-- i-th user's (from 0) the current ones.
local K_UNREAD, K_LOG, K_OLDSEQ, K_PENDING, K_MUTED, K_COUNTS, K_DELETED, K_OLDLOG
local CHANNEL
local RETENTION, MAX_ITEMS, NOW_ISO = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[6]
BODIES = ARGV[7]

local t = redis.call('TIME')
local NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- KEEP_PERIOD is how often the keys' expiry is renewed: daily, or twice per
-- retention if that is shorter.
local KEEP_PERIOD = math.min(86400000, math.floor(RETENTION / 2))

-- What the current user's script changed, for its log events (see finish).
local dirty, removed, updated, read_ids
local UNREAD -- the unread count finish left
local kept_now -- keep (inbox_log.lua) ran for the current user: a log it makes later takes the expiry too
-- The current user's counts, read once (load_counts) and changed in memory;
-- flush_counts writes what changed. C_reset: rewrite them all (a recount).
local C, C_dirty, C_reset
local C_unread -- the unread count unread_count holds as far as this script knows (see flush_counts)
local C_grouped -- whether C holds a count by tag or severity ("t:…", "s:…")

-- KEEP_ALWAYS: every change renews the keys' expiry (keep, inbox_log.lua),
-- so that a key it made has one too; the fan-out (inbox_add.lua) renews
-- once a period instead, and when it may make a key.
local KEEP_ALWAYS = true

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
  C = nil
  kept_now = false
end
use(0, ARGV[4])

local function load_counts()
  if C then return end
  C, C_dirty, C_reset, C_grouped = {}, {}, false, false
  local all = redis.call('HGETALL', K_COUNTS)
  for i = 1, #all, 2 do
    C[all[i]] = tonumber(all[i + 1]) or 0
    if string.byte(all[i], 2) == 58 then C_grouped = true end
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

-- call_chunked calls cmd on key with args, at most 1,000 of them a call
-- (an even number: field, value pairs stay whole): unpack fails past a few
-- thousand values, and an inbox may count thousands of tags.
local function call_chunked(cmd, key, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
  end
end

-- flush_counts writes the counts that changed (all of them after a
-- recount), dropping those at 0, and unread_count with them: set after a
-- recount, else moved by the change (INCRBY), so that a change an older hub
-- made to it alone still shows as a difference (see ensure).
local function flush_counts()
  if not C then return end
  if C_reset then
    redis.call('DEL', K_COUNTS)
    local args = {}
    for k, v in pairs(C) do
      if v > 0 then args[#args + 1] = k; args[#args + 1] = v else C[k] = nil end
    end
    call_chunked('HSET', K_COUNTS, args)
    C_unread = count('unread')
    redis.call('SET', K_UNREAD, C_unread)
  elseif next(C_dirty) then
    local set, del = {}, {}
    for k in pairs(C_dirty) do
      local v = C[k]
      if v and v > 0 then
        set[#set + 1] = k; set[#set + 1] = v
      else
        del[#del + 1] = k; C[k] = nil
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
  C_dirty, C_reset = {}, false
end

-- ensure recounts once when the counts do not describe the items: a user
-- whose inbox an older hub wrote (no counts yet), or one that an older hub
-- changed during a rolling deploy (it keeps unread_count and the items, not
-- the counts). It returns the number of items. The fan-out (light) trusts
-- counts that exist and takes the number from them: the scripts that read
-- the inbox check, and a difference survives its changes (flush_counts).
local function ensure(light)
  load_counts()
  if light and C.v then return (C.visible or 0) + (C.archived or 0) + (C.snoozed or 0) end
  local items = redis.call('ZCARD', K_ORDER)
  local n = (C.visible or 0) + (C.archived or 0) + (C.snoozed or 0)
  if C.v and n == items and (C.unread or 0) == tonumber(redis.call('GET', K_UNREAD) or '0') then
    return items
  end
  -- the log's place (inbox_log.lua) is no count: it goes on
  C, C_dirty, C_reset = {v = (C.v or 0) + 1, q = C.q, lm = C.lm}, {}, true
  for _, id in ipairs(redis.call('ZRANGE', K_ORDER, 0, -1)) do contrib(id, 1) end
  return items
end

-- plain_counts_json is the counts as GET /notifications/counts answers
-- them when nothing counts by tag or severity but normal: version, visible,
-- unread, unseen, archived, snoozed.
local function plain_counts_json(v, vis, unr, uns, arc, snz)
  -- string.format: formatting numbers costs more than the rest
  vis, unr, uns, arc, snz = math.max(vis, 0), math.max(unr, 0), math.max(uns, 0), math.max(arc, 0), math.max(snz, 0)
  if vis > 0 or unr > 0 or uns > 0 or arc > 0 then
    return string.format('{"version":%d,"visible":%d,"unread":%d,"unseen":%d,"archived":%d,"snoozed":%d,' ..
      '"byTag":{},"bySeverity":{"normal":{"visible":%d,"unread":%d,"unseen":%d}}}',
      v, vis, unr, uns, arc, snz, vis, unr, uns)
  end
  return string.format('{"version":%d,"visible":0,"unread":0,"unseen":0,"archived":0,"snoozed":%d,' ..
    '"byTag":{},"bySeverity":{}}', v, snz)
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

-- top_score is the score of an item whose activity is at ms: ms*1024, or
-- just above the top when the top is there already (events of one
-- millisecond keep their arrival order). Scores are unique: paging bounds
-- by them. An event older than the top (one the outbox sweep finished late)
-- takes the next free score at its time.
local function top_score(ms)
  local score = ms * 1024
  load_counts()
  local last = C.top
  if not last then
    local r = redis.call('ZREVRANGE', K_ORDER, 0, 0, 'WITHSCORES')
    last = tonumber(r[2] or '0')
  end
  if last >= score then
    if last < score + 1024 then
      score = last + 1
    else
      while #redis.call('ZRANGEBYSCORE', K_ORDER, score, score, 'LIMIT', 0, 1) > 0 do score = score + 1 end
    end
  end
  -- The highest score given, kept with the counts: at least the top (an
  -- item removed from the top leaves it higher, which only moves the next
  -- item up by one).
  C.top = math.max(last, score)
  C_dirty.top = true
  return score
end

-- tombstone remembers that id must not come back (a retried publish is a
-- duplicate), for the retention and at most 4 × MAX_ITEMS ids.
local function tombstone(id)
  redis.call('ZADD', K_DELETED, NOW, id)
  redis.call('ZREMRANGEBYSCORE', K_DELETED, '-inf', '(' .. (NOW - RETENTION))
  redis.call('ZREMRANGEBYRANK', K_DELETED, 0, -(4 * MAX_ITEMS + 1))
end

-- remove takes item id out of the inbox for reason (retention, expired,
-- deleted). A read not yet flushed stays in the write-behind buffer. It
-- deletes only what the item has: retention removes one on most adds of a
-- full inbox.
local function remove(id, reason)
  local sev, tags, exp = meta(id)
  local archived, snoozed, read, seen = flags(id)
  add_counts(sev, tags, what_counts(archived, snoozed, read, seen), -1)
  redis.call('HDEL', K_ITEMS, id)
  redis.call('ZREM', K_ORDER, id)
  if sev ~= 'normal' or #tags > 0 or exp ~= '' then redis.call('HDEL', K_META, id) end
  if seen then redis.call('HDEL', K_SEEN, id) end
  if archived then redis.call('HDEL', K_ARCHIVED, id) end
  if read then redis.call('HDEL', K_READ, id) end
  if snoozed then redis.call('ZREM', K_DUE, 's:' .. id) end
  if exp ~= '' then redis.call('ZREM', K_DUE, 'x:' .. id) end
  local g = group_of(id)
  if g then
    redis.call('HDEL', K_GROUPS, 'g:' .. id)
    if redis.call('HGET', K_GROUPS, 'k:' .. g.key) == id then redis.call('HDEL', K_GROUPS, 'k:' .. g.key) end
  end
  if reason ~= 'retention' then tombstone(id) end
  removed[reason] = removed[reason] or {}
  table.insert(removed[reason], id)
  dirty = true
end

-- wake brings snoozed item id back: unseen, at the top, its read state
-- kept, its body renewed.
local function wake(id)
  local body = body_key(id, redis.call('HGET', K_ITEMS, id))
  if body then redis.call('EXPIRE', body, math.floor(RETENTION / 1000) + 86400) end -- as long as the item may live
  contrib(id, -1)
  redis.call('ZREM', K_DUE, 's:' .. id)
  redis.call('HDEL', K_SEEN, id)
  redis.call('ZADD', K_ORDER, top_score(NOW), id)
  contrib(id, 1)
  updated[#updated + 1] = id
  dirty = true
end

-- trim drops items beyond the newest MAX_ITEMS and, unless by_count_only,
-- those past the retention age; items is how many there are. It looks at
-- the oldest first: most calls find nothing to do.
local function trim(items, by_count_only)
  local oldest = (NOW - RETENTION) * 1024
  local first = {}
  if not by_count_only then first = redis.call('ZRANGE', K_ORDER, 0, 0, 'WITHSCORES') end
  if first[2] and tonumber(first[2]) < oldest then
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', K_ORDER, '-inf', '(' .. oldest)) do
      remove(id, 'retention')
      items = items - 1
    end
  end
  if items > MAX_ITEMS then
    for _, id in ipairs(redis.call('ZRANGE', K_ORDER, 0, items - MAX_ITEMS - 1)) do
      remove(id, 'retention')
    end
  end
end

-- SETTLE_CHUNK bounds the due items one script wakes or removes (DESIGN's
-- Cost rule: no script holds Redis long); the timers job settles the rest
-- in further scripts at once.
local SETTLE_CHUNK = 200

-- settle brings the inbox up to now: counts checked, old items trimmed,
-- expired items removed, snoozed items whose time came woken (at most
-- SETTLE_CHUNK of them). Every script starts with it, so lists and counts
-- show what is due only while more than a chunk fell due at once.
local function settle()
  trim(ensure())
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K_DUE, '-inf', NOW, 'LIMIT', 0, SETTLE_CHUNK)) do
    local id = string.sub(m, 3)
    if string.sub(m, 1, 1) == 'x' then remove(id, 'expired') else wake(id) end
  end
end
