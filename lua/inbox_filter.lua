-- Filters over a user's items, for the list (inbox_view.lua) and bulk
-- actions (inbox_act.lua): joined behind inbox_lib.lua, whose keys and
-- state it reads.

-- A filter of the list and of bulk actions (ARGV, from its first index):
-- state (visible, unread, unseen, read, archived, snoozed, all), tags
-- (comma list, any of them; "" for any), severities (likewise), event type
-- ("" for any), room id ("" for any).
local function filter_at(i)
  local f = {state = ARGV[i], tags = {}, sevs = {}, typ = ARGV[i + 3], room = ARGV[i + 4]}
  for x in string.gmatch(ARGV[i + 1], '[^,]+') do f.tags[x] = true end
  for x in string.gmatch(ARGV[i + 2], '[^,]+') do f.sevs[x] = true end
  f.any_tag, f.any_sev = next(f.tags) == nil, next(f.sevs) == nil
  return f
end

-- matches reports whether item id passes filter f.
local function matches(id, f)
  local archived, snoozed, read, seen = flags(id)
  local st = f.state
  if st == 'archived' then
    if not archived then return false end
  elseif st == 'snoozed' then
    if not snoozed then return false end
  elseif st ~= 'all' then
    if archived or snoozed then return false end
    if (st == 'unread' and read) or (st == 'read' and not read) or (st == 'unseen' and seen) then return false end
  end
  if not f.any_tag or not f.any_sev then
    local sev, tags = meta(id)
    if not f.any_sev and not f.sevs[sev] then return false end
    if not f.any_tag then
      local hit = false
      for _, tag in ipairs(tags) do if f.tags[tag] then hit = true end end
      if not hit then return false end
    end
  end
  if f.typ ~= '' or f.room ~= '' then
    local raw = body_of(id, redis.call('HGET', K_ITEMS, id)) or ''
    local room, typ = string.match(raw, '^{"notificationId":"[^"]*","roomId":(%d+),"eventType":"([^"]*)"')
    if (f.typ ~= '' and typ ~= f.typ) or (f.room ~= '' and room ~= f.room) then return false end
  end
  return true
end

-- scan returns up to limit ids that pass f, newest first, from score bound
-- (a ZREVRANGEBYSCORE max: "+inf", "(123" or "123") down, looking at no
-- more than look items (a script's work must not grow with the inbox), and
-- whether more may pass below, then where the next page starts below: the
-- last item returned when the page is full, else the last item looked at
-- (a page ended by look).
local function scan(f, bound, limit, look)
  local out, looked, last = {}, 0, nil
  while true do
    local n = math.min(200, look - looked)
    if n <= 0 then return out, true, last end
    local ids = order_range(bound, '-inf', n)
    for i = 1, #ids, 2 do
      if matches(ids[i], f) then
        -- A full page resumes below its own last item (what the
        -- items looked at past it did not pass).
        if #out == limit then return out, true, out[#out] end
        out[#out + 1] = ids[i]
      end
      looked, last = looked + 1, ids[i]
      bound = '(' .. ids[i + 1]
    end
    if #ids < 2 * n then return out, false, last end
  end
end

-- walk looks at the items from score max down to min (ZREVRANGEBYSCORE
-- bounds), at most look of them, and appends to out the ids that pass f.
-- It returns how many it looked at, whether nothing is left above min, and
-- the scores of the first and the last item it looked at.
local function walk(f, max, min, look, out)
  local looked, first, last = 0, nil, nil
  while looked < look do
    local n = math.min(200, look - looked)
    local ids = order_range(max, min, n)
    for i = 1, #ids, 2 do
      if matches(ids[i], f) then out[#out + 1] = ids[i] end
      first, last = first or ids[i + 1], ids[i + 1]
      max = '(' .. ids[i + 1]
    end
    looked = looked + #ids / 2
    if #ids < 2 * n then return looked, true, first, last end
  end
  return looked, #order_range(max, min, 1) == 0, first, last
end

-- bound_of is the ZREVRANGEBYSCORE max just below (exclusive) or at
-- (inclusive) item id's place; an id no longer listed falls back to its
-- own time (fallback, a score).
local function bound_of(id, fallback, exclusive)
  if id == '' then return '+inf' end
  local s = order_score(id) or fallback
  if exclusive then return '(' .. s end
  return s
end
