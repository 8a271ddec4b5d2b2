-- What every inbox script shares before the user's keys (inbox_lib.lua),
-- the fan-out's plain one too (inbox_add_plain.lua): the arguments all of
-- them take first, the clock, a small inbox's names and limits, and how the
-- log's entries and the live events are written. Joined behind
-- inbox_item.lua.
-- ARGV[1]  retention in ms (items whose activity is older drop out)
-- ARGV[2]  largest number of items kept
-- ARGV[3]  how many entries the user's log keeps: the user stream resumes this far back
-- ARGV[4]  the user's channel, user:{u}
-- ARGV[5]  "1" to SPUBLISH (cluster), else PUBLISH
-- ARGV[6]  now, RFC 3339 (the hub's clock): the time of what this script does
-- ARGV[7]  where the events' bodies are kept, a key prefix (inbox_item.lua's BODIES)
-- ARGV[8]  what this script may write that older hubs cannot read: "" nothing,
--          "1" a new inbox small (see SMALL), "2" that and an event's body
--          kept once (inbox_add.lua)
-- ARGV[9..] the script's own
local RETENTION, MAX_ITEMS, NOW_ISO = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[6]
-- LOG_MAX is how many entries the log keeps.
local LOG_MAX = tonumber(ARGV[3])
-- RETENTION_SECS is the keys' expiry; BODY_SECS a body's, which outlives
-- every item that shows it by a day (inbox_item.lua's BODIES)
local RETENTION_SECS = math.floor(RETENTION / 1000)
local BODY_SECS = RETENTION_SECS + 86400
BODIES = ARGV[7]

local t = redis.call('TIME')
local NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- KEEP_PERIOD is how often the keys' expiry is renewed: daily, or twice per
-- retention if that is shorter; PERIOD is this one (the counts' kept).
local KEEP_PERIOD = math.min(86400000, math.floor(RETENTION / 2))
local PERIOD = math.floor(NOW / KEEP_PERIOD)

-- A small inbox (inbox_lib.lua's SMALL) keeps its counts by short names
-- (SMALL_NAMES[i] as SMALL_FIELDS[i]; "k", kept, says it is small; "lm" it
-- does not keep: its log is at hand), and stays small up to SMALL_ITEMS
-- items and SMALL_LOG log entries, which keep its hashes in Redis' compact
-- encoding (hash-max-listpack-entries, 128).
local SMALL_NAMES = {'kept', 'v', 'visible', 'unread', 'unseen', 'archived', 'snoozed', 'q', 'top'}
local SMALL_FIELDS = {'k', 'v', 'i', 'u', 'n', 'a', 'z', 'q', 't'}
local SMALL_ITEMS, SMALL_LOG = 48, 64

-- plain_counts_json is the counts as GET /notifications/counts answers
-- them when nothing counts by tag or severity but normal: version, visible,
-- unread, unseen, archived, snoozed.
local function plain_counts_json(v, vis, unr, uns, arc, snz)
  vis, unr, uns, arc, snz = math.max(vis, 0), math.max(unr, 0), math.max(uns, 0), math.max(arc, 0), math.max(snz, 0)
  if vis > 0 or unr > 0 or uns > 0 or arc > 0 then
    vis, unr, uns = num(vis), num(unr), num(uns)
    return '{"version":' .. num(v) .. ',"visible":' .. vis .. ',"unread":' .. unr .. ',"unseen":' .. uns ..
      ',"archived":' .. num(arc) .. ',"snoozed":' .. num(snz) .. ',"byTag":{},"bySeverity":{"normal":{"visible":' ..
      vis .. ',"unread":' .. unr .. ',"unseen":' .. uns .. '}}}'
  end
  return '{"version":' .. num(v) .. ',"visible":0,"unread":0,"unseen":0,"archived":0,"snoozed":' .. num(snz) ..
    ',"byTag":{},"bySeverity":{}}'
end

-- item_head is the start of a new item's JSON as notification.created
-- shows it: its own JSON (own), its state, severity, tags (quoted, comma
-- separated) and expiresAt (JSON), up to "group": (created_data).
local function item_head(own, sev, tags, expires)
  return string.sub(own, 1, -2) .. ',"readAt":null,"seenAt":null,"archivedAt":null,"snoozedUntil":null,' ..
    '"severity":"' .. sev .. '","tags":[' .. tags .. '],"expiresAt":' .. expires .. ',"group":'
end

-- created_data is notification.created's data: the item (head, its group's
-- JSON, its activity from its score) with the user's unread count and
-- counts (JSON).
local function created_data(head, group, score, unread, counts)
  return head .. group .. ',"activityAt":' .. quote(iso(math.floor(score / 1024))) .. ',"unread":' .. num(unread) ..
    ',"counts":' .. counts .. '}'
end

-- counts_line is the counts as a log entry keeps them (inbox_log.lua):
-- "v,visible,unread,unseen", and ",archived,snoozed" unless both are 0.
local function counts_line(v, vis, unr, uns, arc, snz)
  local s = num(v) .. ',' .. num(vis) .. ',' .. num(unr) .. ',' .. num(uns)
  if arc == 0 and snz == 0 then return s end
  return s .. ',' .. num(arc) .. ',' .. num(snz)
end

-- log_stamp is how an entry at ms keeps its time: a created entry (of item
-- id) as "+<ms after the item's own>", mostly a few; else ms.
local function log_stamp(ms, id)
  if id then
    local after = ms - id_score(id) / 1024
    if after >= 0 then return '+' .. num(after) end
  end
  return num(ms)
end

-- log_send publishes entry seq at ms as the event (typ, data) on channel,
-- the user's, exactly as a room event travels, and returns its id.
local function log_send(channel, ms, seq, typ, data)
  local id = num(ms) .. '-' .. num(seq)
  local msg = '{"id":"' .. id .. '","seq":' .. num(seq) .. ',"eventType":"' .. typ .. '","data":' .. data .. '}'
  if ARGV[5] == '1' then
    redis.call('SPUBLISH', channel, msg)
  else
    redis.call('PUBLISH', channel, msg)
  end
  return id
end

-- parse_entry reads a log entry: its ms (a number), counts and what, or
-- nil.
local function parse_entry(e)
  local after, ms, snap, what = string.match(e, '^(%+?)(%d+)\t([^\t]*)\t(.*)$')
  if not ms then return nil end
  ms = tonumber(ms)
  if after == '+' then ms = ms + id_score(string.sub(what, 3)) / 1024 end
  return ms, snap, what
end
