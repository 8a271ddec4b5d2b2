-- Claim a user's deliveries beyond the tab that are due: decide each one's
-- fate now (canceled, skipped, deferred, pushed back behind a retrying one)
-- and lease the rest to the caller for a hand-off, with the caps and the
-- dedupe window taken for it. A delivery whose lease ran out (its instance
-- died mid-hand-off) is claimed again as it was: same hand-off, same
-- Idempotency-Key.
--
-- The records are delivery_schedule.lua's.
--
-- KEYS[1..8] the user's items (inbox_item.lua, joined in front of this with
--            instances_lib.lua): what cancels a delivery, the hand-off's item
-- KEYS[9] delivery:{u}  KEYS[10] delivery:due:{u}  KEYS[11] delivery:done:{u}
-- KEYS[12] settings:channels:{u}  KEYS[13] user:online:{u}
-- ARGV[1]  most deliveries claimed
-- ARGV[2]  lease in ms
-- ARGV[3]  lease token
-- ARGV[4]  the end of the user's quiet hours (ms) when now is inside them, or ""
-- ARGV[5]  caps, JSON {"push":[perHour, perDay]} (0: no bound)
-- ARGV[6]  the sent prefix, delivery:sent:{u}:
-- ARGV[7]  the dedupe prefix, delivery:dedupe:{u}:
-- ARGV[8]  finished records are dropped this long (ms) after they finished
-- ARGV[9]  how long the delivery keys live after a write, in ms
-- ARGV[10] the dead hub instances' ids, comma separated: a stream in
--          user:online ("<instance>.<connection>", +inf) counts unless its
--          instance is dead (then it is removed)
-- ARGV[11] where the events' bodies are (inbox_item.lua's BODIES)
-- Returns {next due (ms) or "", {channel, state, reason, …}, hand-off, …}:
-- each hand-off {channel, attempt, head record id (hk), record ids (comma
-- separated), their traceparents (comma separated, "" for none), item JSON, …}.
local K_DREC, K_DDUE, K_DONE, K_SETCH, K_ONLINE = KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13]
BODIES = ARGV[11]
local limit, lease, token, quiet_end = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local caps = cjson.decode(ARGV[5])
local sent_prefix, dedupe_prefix, keep_ms, keys_ttl = ARGV[6], ARGV[7], tonumber(ARGV[8]), ARGV[9]
local t = redis.call('TIME')
local NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Finished records leave after their time, a few per call.
for _, rid in ipairs(redis.call('ZRANGEBYSCORE', K_DONE, '-inf', NOW - keep_ms, 'LIMIT', 0, 100)) do
  redis.call('HDEL', K_DREC, rid)
  redis.call('ZREM', K_DONE, rid)
end

local moves = {} -- channel, state, reason per transition, for the metrics

local function put(rid, rec)
  rec.t = NOW
  redis.call('HSET', K_DREC, rid, cjson.encode(rec))
end

local function channel_of(rid) return string.match(rid, '|([^|]*)$') end

-- finish ends a record in state s (canceled, skipped) for reason r.
local function finish_rec(rid, rec, s, r)
  rec.s, rec.r, rec.due, rec.ls = s, r, nil, nil
  put(rid, rec)
  redis.call('ZREM', K_DDUE, rid)
  redis.call('ZADD', K_DONE, NOW, rid)
  moves[#moves + 1] = channel_of(rid)
  moves[#moves + 1] = s
  moves[#moves + 1] = r
end

local function move_to(rid, rec, due, s, r)
  rec.due, rec.s, rec.r = due, s, r
  put(rid, rec)
  redis.call('ZADD', K_DDUE, due, rid)
  if s == 'deferred' then
    moves[#moves + 1] = channel_of(rid)
    moves[#moves + 1] = s
    moves[#moves + 1] = r
  end
end

-- why_canceled is the reason the item's state cancels the delivery, or nil.
local function why_canceled(rec)
  if rec.tg == '' then return nil end
  if redis.call('HEXISTS', K_ITEMS, rec.tg) == 0 then return 'deleted' end
  if rec.u == 'none' then return nil end
  local archived, _, read, seen = flags(rec.tg)
  if read then return 'read' end
  if archived then return 'archived' end
  if rec.u == 'seen' and seen then return 'seen' end
  return nil
end

local prefs = {}
local function pref(ch)
  if prefs[ch] == nil then
    local raw = redis.call('HGET', K_SETCH, ch)
    prefs[ch] = raw and cjson.decode(raw) or false
  end
  return prefs[ch]
end

local function why_not_wanted(rec, ch)
  local p = pref(ch)
  if not p then return nil end
  if p.enabled == false then return 'disabled' end
  for _, t in ipairs(p.mutedEventTypes or {}) do
    if t == rec.ty then return 'muted' end
  end
  return nil
end

local online
local function is_online()
  if online ~= nil then
    return online
  end
  -- A lease of an older hub that is still running (a finite score)…
  online = #redis.call('ZRANGEBYSCORE', K_ONLINE, '(' .. NOW, '(+inf', 'LIMIT', 0, 1) > 0
  if not online then -- … or a stream of an instance not dead.
    local streams = redis.call('ZRANGEBYSCORE', K_ONLINE, '+inf', '+inf')
    local gone = of_dead(streams, id_set(ARGV[10]))
    for _, m in ipairs(gone) do
      redis.call('ZREM', K_ONLINE, m)
    end
    online = #streams > #gone
  end
  return online
end

-- The head of each channel's queue while it waits to be retried: later
-- deliveries of the channel wait behind it (due order per user).
local holds = {}
local function hold_of(ch)
  if holds[ch] == nil then
    holds[ch] = false
    local h = redis.call('HGET', K_DREC, 'hol|' .. ch)
    if h then
      local due, rid = string.match(h, '^(%d+)\t(.*)$')
      local rec = redis.call('HGET', K_DREC, rid)
      if rec and cjson.decode(rec).s == 'retrying' then
        holds[ch] = {due = tonumber(due), rid = rid}
      else
        redis.call('HDEL', K_DREC, 'hol|' .. ch)
      end
    end
  end
  return holds[ch]
end

local due = redis.call('ZRANGEBYSCORE', K_DDUE, '-inf', NOW, 'LIMIT', 0, limit)
local recs = {}
for _, rid in ipairs(due) do
  local raw = redis.call('HGET', K_DREC, rid)
  if raw then
    recs[#recs + 1] = {rid = rid, rec = cjson.decode(raw)}
  else
    redis.call('ZREM', K_DDUE, rid)
  end
end
table.sort(recs, function(a, b)
  if a.rec.o ~= b.rec.o then return a.rec.o < b.rec.o end
  return a.rid < b.rid
end)

-- Decide; what is left goes out, grouped into hand-offs (a digest's
-- deliveries together).
local groups, order = {}, {}
for _, x in ipairs(recs) do
  local rid, rec = x.rid, x.rec
  local ch = channel_of(rid)
  local go = rec.s == 'sending' -- its lease ran out: out again as it was
  if not go then
    local why = why_canceled(rec) or why_not_wanted(rec, ch)
    local hold = hold_of(ch)
    if why then
      finish_rec(rid, rec, 'canceled', why)
    elseif rec.off == 1 and is_online() then
      finish_rec(rid, rec, 'skipped', 'online')
    elseif quiet_end ~= '' and rec.cr ~= 1 then
      move_to(rid, rec, tonumber(quiet_end), 'deferred', 'quiet_hours')
    elseif hold and hold.rid ~= rid and hold.due > NOW then
      move_to(rid, rec, hold.due, rec.s, rec.r)
    else
      go = true
    end
  end
  if go then
    local key = ch .. '|' .. rid
    if rec.g then key = ch .. '|g' .. string.format('%d', rec.g) end
    if not groups[key] then
      groups[key] = {ch = ch, members = {}}
      order[#order + 1] = key
    end
    table.insert(groups[key].members, {rid = rid, rec = rec})
  end
end

local function count_since(key, since)
  return redis.call('ZCOUNT', key, '(' .. since, '+inf')
end

local handoffs = {}
for _, key in ipairs(order) do
  local grp = groups[key]
  local ch, members = grp.ch, grp.members
  local first = members[1].rec.hk or members[1].rid
  local sent_key = sent_prefix .. ch
  local resend = redis.call('ZSCORE', sent_key, first) ~= false
  local cap = caps[ch]
  local over = false
  if cap and not resend then
    redis.call('ZREMRANGEBYSCORE', sent_key, '-inf', NOW - 86400000)
    if (cap[1] > 0 and count_since(sent_key, NOW - 3600000) >= cap[1]) or
        (cap[2] > 0 and count_since(sent_key, NOW - 86400000) >= cap[2]) then
      over = true
    end
  end
  local going = {}
  for _, m in ipairs(members) do
    if over then
      finish_rec(m.rid, m.rec, 'skipped', 'rate_limited')
    elseif m.rec.dk and m.rec.s ~= 'sending' then
      local dk = dedupe_prefix .. ch .. ':' .. m.rec.dk
      local holder = redis.call('GET', dk)
      if holder and holder ~= m.rid then
        finish_rec(m.rid, m.rec, 'skipped', 'deduplicated')
      else
        redis.call('SET', dk, m.rid, 'PX', m.rec.dw * 1000)
        going[#going + 1] = m
      end
    else
      going[#going + 1] = m
    end
  end
  if #going > 0 then
    -- The hand-off's name (its Idempotency-Key) is fixed when it is first
    -- claimed: a digest whose first item was canceled before a retry keeps
    -- it, so the gateway sees the same hand-off again.
    local head = going[1].rid
    for _, m in ipairs(going) do
      if m.rec.hk then head = m.rec.hk; break end
    end
    redis.call('ZADD', sent_key, NOW, head)
    redis.call('PEXPIRE', sent_key, 86400000)
    local ho = {ch, 0, head}
    local ids, tps, items = {}, {}, {}
    for _, m in ipairs(going) do
      local rec = m.rec
      if rec.s ~= 'sending' then rec.ps = rec.s end
      rec.s, rec.r, rec.ls, rec.n = 'sending', nil, token, rec.n + 1
      rec.hk = head
      rec.due = NOW + lease
      if rec.n > ho[2] then ho[2] = rec.n end
      put(m.rid, rec)
      redis.call('ZADD', K_DDUE, rec.due, m.rid)
      ids[#ids + 1] = m.rid
      tps[#tps + 1] = rec.tp or ''
      local item
      if rec.tg ~= '' then item = item_json(rec.tg) end
      items[#items + 1] = item or rec.it or ('{"notificationId":"' .. string.match(m.rid, '^(.*)|') .. '"}')
    end
    ho[2] = string.format('%d', ho[2])
    ho[4] = table.concat(ids, ',')
    ho[5] = table.concat(tps, ',')
    for _, it in ipairs(items) do ho[#ho + 1] = it end
    handoffs[#handoffs + 1] = ho
  end
end

redis.call('PEXPIRE', K_DREC, keys_ttl)
redis.call('PEXPIRE', K_DDUE, keys_ttl)
redis.call('PEXPIRE', K_DONE, keys_ttl)
local nxt = redis.call('ZRANGE', K_DDUE, 0, 0, 'WITHSCORES')
local out = {'', moves}
if nxt[2] then out[1] = nxt[2] end
for _, ho in ipairs(handoffs) do out[#out + 1] = ho end
return out
