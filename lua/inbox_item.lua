-- An inbox's items as a reader sees them: the library of the inbox's that
-- another script includes to read a user's items in the same atomic step
-- (delivery_claim.lua: is it read, seen, archived, still there; the item's
-- JSON for its hand-off). Every inbox script stands on it too (inbox_lib.lua).
-- It reads and writes no key but these, takes no ARGV, and its caller
-- passes the keys in this order (package inbox's ItemKeys), from KEYS[b+1]:
-- KEYS[b+1] inbox:{u}          hash  id -> the item: its score when the inbox is small
--                                    (the difference from id_score)
--                                    (inbox_lib.lua's SMALL), then nothing (its body is
--                                    the event's, BODIES .. id), "\t<id>" (a group's: the
--                                    body of the event it shows), or the body itself (JSON)
-- KEYS[b+2] inbox:order:{u}    zset  id, scored by activity (ms*1024, unique)
-- KEYS[b+3] inbox:read:{u}     hash  id -> readAt
-- KEYS[b+4] inbox:meta:{u}     hash  id -> "severity\ttag,tag\texpiresAt"
-- KEYS[b+5] inbox:seen:{u}     hash  id -> seenAt
-- KEYS[b+6] inbox:archived:{u} hash  id -> archivedAt
-- KEYS[b+7] inbox:due:{u}      zset  "s:<id>" (snoozed until) and "x:<id>" (expires at), scored in ms
-- KEYS[b+8] inbox:groups:{u}   hash  "k:<groupKey>" -> the open item of the key;
--                                    "g:<id>" -> "firstMs\tcount\tactors\tfirst\tgroupKey";
--                                    "b" -> where a bulk action left off (inbox_act.lua)
-- use_items(b) makes the user whose keys start after KEYS[b] the current one;
-- the first user's (b = 0) are current from the start.
-- An event's body (its JSON as an item lists it, without the state) is kept
-- once for all its recipients, in the string key BODIES .. notificationId
-- (inbox:body:<id>), which lives as long as an item may show it; the
-- caller sets BODIES (its own ARGV). On a cluster the items hold it.
local K_ITEMS, K_ORDER, K_READ, K_META, K_SEEN, K_ARCHIVED, K_DUE, K_GROUPS
local BODIES = ''

local function use_items(b)
  K_ITEMS, K_ORDER, K_READ, K_META, K_SEEN, K_ARCHIVED, K_DUE, K_GROUPS =
    KEYS[b + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4], KEYS[b + 5], KEYS[b + 6], KEYS[b + 7], KEYS[b + 8]
end
use_items(0)

-- iso formats ms since the epoch as RFC 3339 in UTC, as the hub does.
local iso_done = {}
local function iso(ms)
  if iso_done[ms] then return iso_done[ms] end
  local s = math.floor(ms / 1000)
  local days = math.floor(s / 86400)
  local rem = s - days * 86400
  local z = days + 719468 -- civil_from_days (H. Hinnant)
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  local out = string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d,
    math.floor(rem / 3600), math.floor(rem % 3600 / 60), rem % 60, ms % 1000)
  iso_done[ms] = out
  return out
end

-- num is integer n as a string, each number formatted once a script: a
-- fan-out writes the same few numbers for each recipient, and formatting
-- costs more than the rest of the strings (string.format and .. format
-- numbers by sprintf).
local nums = {}
local function num(n)
  local s = nums[n]
  if not s then
    s = string.format('%d', n)
    nums[n] = s
  end
  return s
end

local function quote(s)
  if s then return '"' .. s .. '"' end
  return 'null'
end

-- split is the comma separated list s as a table ("" for none).
local function split(s)
  local out = {}
  for x in string.gmatch(s, '[^,]+') do out[#out + 1] = x end
  return out
end

-- meta returns an item's severity, tags (a list) and expiresAt ("" when none).
local function meta(id)
  local m = redis.call('HGET', K_META, id)
  if not m then return 'normal', {}, '' end
  local sev, tags, exp = string.match(m, '^([^\t]*)\t([^\t]*)\t(.*)$')
  return sev, split(tags), exp
end

-- flags returns what an item's state is: archived, snoozed, read, seen.
local function flags(id)
  return redis.call('HEXISTS', K_ARCHIVED, id) == 1, redis.call('ZSCORE', K_DUE, 's:' .. id) ~= false,
    redis.call('HEXISTS', K_READ, id) == 1, redis.call('HEXISTS', K_SEEN, id) == 1
end

-- group_of reads item id's group record: first event's ms, count, actors
-- (a list, newest first), the first notificationId and the group's key;
-- nil when the item is no group's.
local function group_of(id)
  local rec = redis.call('HGET', K_GROUPS, 'g:' .. id)
  if not rec then return nil end
  local first_ms, n, actors, first, key = string.match(rec, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$')
  return {first_ms = tonumber(first_ms), count = tonumber(n), actors = split(actors), first = first, key = key}
end

local function group_json(g)
  local actors = {}
  for i, a in ipairs(g.actors) do actors[i] = '"' .. a .. '"' end
  return '{"key":"' .. g.key .. '","count":' .. g.count .. ',"actors":[' .. table.concat(actors, ',') ..
    '],"first":"' .. g.first .. '"}'
end

-- body_key is the key of the body item id shows given its value in
-- inbox:{u}, nil when the item holds it (or is none).
local function body_key(id, value)
  if not value then return nil end
  value = string.match(value, '^%-?%d*(.*)$')
  if string.byte(value, 1) == 123 then return nil end
  if value == '' then return BODIES .. id end
  return BODIES .. string.sub(value, 2)
end

-- id_score is the score of notificationId id's own time: its ms*1024. A
-- small inbox's item keeps its score as the difference from it, mostly 0.
local function id_score(id)
  return tonumber(string.match(id, ':(%d+)')) * 1024
end

-- order_score is item id's score (its activity, ms*1024, unique) given its
-- value in inbox:{u} (nil: read it), a string; nil when id is no item.
local function order_score(id, value)
  value = value or redis.call('HGET', K_ITEMS, id)
  if not value then return nil end
  local off = string.match(value, '^(%-?%d+)')
  if off then return string.format('%.0f', id_score(id) + tonumber(off)) end
  return redis.call('ZSCORE', K_ORDER, id) or nil
end

-- body_of is item id's body (its own JSON, without the state) given its
-- value in inbox:{u}: the value itself, or the body of the event it names
-- under id's notificationId; nil when id is no item.
local function body_of(id, value)
  if not value then return nil end
  local key = body_key(id, value)
  if not key then return string.match(value, '^%-?%d*(.*)$') end -- "{": held by the item
  local ref = string.sub(key, #BODIES + 1)
  local body = redis.call('GET', key)
  if not body then -- lost (Redis evicted it): the item still lists
    local room = string.match(id, '^(%d+):')
    return '{"notificationId":"' .. id .. '","roomId":' .. room ..
      ',"eventType":"","data":null,"publisherId":null,"timestamp":null}'
  end
  if ref == id then return body end
  return '{"notificationId":"' .. id .. '"' .. string.sub(body, #ref + 21)
end

-- item_json is item id as lists show it: its own JSON and its state.
local function item_json(id)
  local value = redis.call('HGET', K_ITEMS, id)
  local raw = body_of(id, value)
  if not raw then return nil end
  local sev, tags, exp = meta(id)
  local quoted = {}
  for i, tag in ipairs(tags) do quoted[i] = '"' .. tag .. '"' end
  local due = redis.call('ZSCORE', K_DUE, 's:' .. id)
  local snoozed = 'null'
  if due then snoozed = quote(iso(tonumber(due))) end
  local expires = 'null'
  if exp ~= '' then expires = quote(exp) end
  local act = math.floor(tonumber(order_score(id, value) or '0') / 1024)
  local g = group_of(id)
  local group = 'null'
  if g then group = group_json(g) end
  return string.sub(raw, 1, -2) .. ',"readAt":' .. quote(redis.call('HGET', K_READ, id) or nil) ..
    ',"seenAt":' .. quote(redis.call('HGET', K_SEEN, id) or nil) ..
    ',"archivedAt":' .. quote(redis.call('HGET', K_ARCHIVED, id) or nil) ..
    ',"snoozedUntil":' .. snoozed .. ',"severity":"' .. sev .. '","tags":[' .. table.concat(quoted, ',') ..
    '],"expiresAt":' .. expires .. ',"group":' .. group .. ',"activityAt":' .. quote(iso(act)) .. '}'
end
