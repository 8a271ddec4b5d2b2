-- Read a user's log (inbox_log.lua) as the events it sent: what a user
-- stream resumes from. It changes nothing.
-- KEYS and ARGV[1..8]: see inbox_lib.lua.
-- ARGV[9] where to start: "-" the oldest entry, "<ms>-<seq>" that id or the
--         first after it, "(<ms>-<seq>" the first after it, "+" the newest
-- ARGV[10] how many entries at most
-- Returns {entries looked at, then id, seq, type, data of each, oldest
-- first}. A created item is shown as it is now (what changed it since
-- follows in the log), with the counts of its time; one gone since is
-- notification.counts, the counts of its time, so that every seq is there.
load_counts()
local q = C.q or 0
if q == 0 then return {0} end

-- first_kept is the oldest seq the log holds, nil when none: entries go
-- from the bottom (LOG_MAX may have been raised), so those kept are a run
-- up to q.
local function first_kept()
  local lo, hi = math.max(1, q - LOG_MAX + 1), q
  if not log_entry(hi) then return nil end
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if log_entry(mid) then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- at_or_after is the first seq from lo whose id is at least ms-seq (after
-- it when exclusive), q + 1 when none: ids rise with seq.
local function at_or_after(lo, ms, seq, exclusive)
  if seq >= lo and seq <= q and log_entry(seq) == ms then -- the id is the log's: mostly so
    if exclusive then return seq + 1 end
    return seq
  end
  local function before(k) -- entry k comes before the place sought
    local kms = log_entry(k)
    if not kms then return true end
    if kms ~= ms then return kms < ms end
    if exclusive then return k <= seq end
    return k < seq
  end
  local hi = q + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if before(mid) then lo = mid + 1 else hi = mid end
  end
  return lo
end

local function counts_of(snap)
  if string.byte(snap, 1) == 123 then return snap end -- "{": the JSON itself
  local n = split(snap)
  return plain_counts_json(tonumber(n[1]), tonumber(n[2]), tonumber(n[3]), tonumber(n[4]),
    tonumber(n[5] or '0'), tonumber(n[6] or '0'))
end

local function items_of(ids)
  local items = {}
  for _, id in ipairs(ids) do
    local item = item_json(id)
    if item then items[#items + 1] = item end
  end
  return '[' .. table.concat(items, ',') .. ']'
end

-- event_of is an entry's event: its type and data.
local function event_of(snap, what)
  local counts = counts_of(snap)
  local kind, a, b = string.match(what, '^(%a)\t([^\t]*)\t?(.*)$')
  if kind == 'c' then
    local item = item_json(a)
    if not item then return 'notification.counts', counts end
    local unread = string.match(counts, '"unread":(%d+)')
    return 'notification.created', string.sub(item, 1, -2) .. ',"unread":' .. unread .. ',"counts":' .. counts .. '}'
  elseif kind == 'r' then
    local unread = string.match(counts, '"unread":(%d+)')
    return 'notification.read', '{"notificationIds":' .. quoted_ids(split(b)) .. ',"readAt":"' .. a ..
      '","unread":' .. unread .. ',"counts":' .. counts .. '}'
  elseif kind == 'd' then
    return 'notification.deleted', '{"notificationIds":' .. quoted_ids(split(b)) .. ',"reason":"' .. a ..
      '","counts":' .. counts .. '}'
  elseif kind == 'u' then
    return 'notification.updated', '{"notifications":' .. items_of(split(a)) .. ',"counts":' .. counts .. '}'
  end
  return 'notification.updated', '{"filter":' .. b .. ',"action":"' .. a .. '","counts":' .. counts .. '}'
end

local from = first_kept()
if not from then return {0} end
local start, want = ARGV[9], tonumber(ARGV[10])
if start == '+' then
  from, want = q, 1
elseif start ~= '-' then
  local exclusive = string.sub(start, 1, 1) == '('
  if exclusive then start = string.sub(start, 2) end
  local ms, seq = string.match(start, '^(%d+)-(%d+)$')
  from = at_or_after(from, tonumber(ms), tonumber(seq), exclusive)
end
local to = math.min(q, from + want - 1)
local out = {math.max(0, to - from + 1)}
for seq = from, to do
  local ms, snap, what = log_entry(seq)
  if ms then
    local typ, data = event_of(snap, what)
    out[#out + 1] = ms .. '-' .. seq
    out[#out + 1] = seq
    out[#out + 1] = typ
    out[#out + 1] = data
  end
end
return out
