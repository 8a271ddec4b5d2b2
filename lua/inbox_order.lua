-- The order of a user's items, and what moves them: joined behind
-- inbox_lib.lua. A large inbox keeps its order in inbox:order (a sorted
-- set); a small one (SMALL) in its items' values, "<score>…"
-- (inbox_item.lua), read and sorted once a script: what is small stays so
-- by SMALL_ITEMS and SMALL_LOG (inbox_frame.lua).

-- bound reads a score bound as ZRANGEBYSCORE takes it ("+inf", "(123",
-- "123"): the score and whether it is left out.
local function bound(b)
  if type(b) == 'number' then return b, false end
  local out = string.byte(b, 1) == 40 -- "("
  if out then b = string.sub(b, 2) end
  if b == '+inf' then return math.huge, out end
  if b == '-inf' then return -math.huge, out end
  return tonumber(b), out
end

-- order_range is the items whose score is between hi and lo (bounds as
-- ZRANGEBYSCORE takes them), at most n (-1: all), newest first or, when
-- up, oldest first; as WITHSCORES gives them: id, score, id, score, ….
local function order_range(hi, lo, n, up)
  load_counts()
  if not SMALL then
    if up then return redis.call('ZRANGEBYSCORE', K_ORDER, lo, hi, 'WITHSCORES', 'LIMIT', 0, n) end
    return redis.call('ZREVRANGEBYSCORE', K_ORDER, hi, lo, 'WITHSCORES', 'LIMIT', 0, n)
  end
  local h, h_out = bound(hi)
  local l, l_out = bound(lo)
  local all, out = order_all(), {}
  local from, to, step = 1, #all, 1
  if up then from, to, step = #all, 1, -1 end
  for i = from, to, step do
    local score = all[i][2]
    if (score < h or (score == h and not h_out)) and (score > l or (score == l and not l_out)) then
      out[#out + 1] = all[i][1]
      out[#out + 1] = string.format('%.0f', score)
      if #out == 2 * n then break end
    end
  end
  return out
end

-- order_count is how many items the inbox orders.
local function order_count()
  load_counts()
  if SMALL then return #order_all() end
  return redis.call('ZCARD', K_ORDER)
end

-- order_set places item id at score. rest is what its value holds besides
-- (inbox_item.lua), nil to keep it: a small inbox writes both in one.
local function order_set(id, score, rest)
  load_counts()
  if SMALL then
    if rest == nil then rest = string.match(redis.call('HGET', K_ITEMS, id) or '', '^%-?%d*(.*)$') end
    redis.call('HSET', K_ITEMS, id, num(score - id_score(id)) .. rest)
    ORDER = nil
    return
  end
  if rest ~= nil then redis.call('HSET', K_ITEMS, id, rest) end
  redis.call('ZADD', K_ORDER, score, id)
end

-- order_new adds item id at score, its value holding rest besides, unless
-- it is there: whether it was not.
local function order_new(id, score, rest)
  load_counts()
  if SMALL then
    if redis.call('HSETNX', K_ITEMS, id, num(score - id_score(id)) .. rest) == 0 then return false end
    ORDER = nil
    return true
  end
  if redis.call('HSETNX', K_ITEMS, id, rest) == 0 then return false end
  redis.call('ZADD', K_ORDER, score, id)
  return true
end

-- order_rem takes item id out of the order (its value goes with the item).
local function order_rem(id)
  if SMALL then ORDER = nil else redis.call('ZREM', K_ORDER, id) end
end

-- grow makes a small inbox large, for good (make_large).
local function grow()
  load_counts()
  if SMALL then make_large() end
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
  -- a new inbox (load_counts) has nothing to read
  local items = 0
  if not FRESH or C.v then items = order_count() end
  if items == 0 and not C.v then -- nothing yet: nothing to write, the counts' first version
    C.v, FRESH = 1, true
    return 0
  end
  local n = (C.visible or 0) + (C.archived or 0) + (C.snoozed or 0)
  if C.v and n == items and (C.unread or 0) == tonumber(redis.call('GET', K_UNREAD) or '0') then
    return items
  end
  -- the log's place (inbox_log.lua) and the keys' renewal are no counts
  C, C_dirty, C_reset = {v = (C.v or 0) + 1, q = C.q, lm = C.lm, kept = C.kept}, {}, true
  local all = order_range('+inf', '-inf', -1)
  for i = 1, #all, 2 do contrib(all[i], 1) end
  return items
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
    local r = order_range('+inf', '-inf', 1)
    last = tonumber(r[2] or '0')
  end
  if last >= score then
    if last < score + 1024 then
      score = last + 1
    else
      while #order_range(score, score, 1) > 0 do score = score + 1 end
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
  order_rem(id)
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
  if body then redis.call('EXPIRE', body, BODY_SECS) end -- as long as the item may live
  contrib(id, -1)
  redis.call('ZREM', K_DUE, 's:' .. id)
  redis.call('HDEL', K_SEEN, id)
  order_set(id, top_score(NOW))
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
  if not by_count_only then first = order_range('+inf', '-inf', 1, true) end
  if first[2] and tonumber(first[2]) < oldest then
    local old = order_range('(' .. oldest, '-inf', -1, true)
    for i = 1, #old, 2 do
      remove(old[i], 'retention')
      items = items - 1
    end
  end
  if items > MAX_ITEMS then
    local old = order_range('+inf', '-inf', items - MAX_ITEMS, true)
    for i = 1, #old, 2 do remove(old[i], 'retention') end
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
