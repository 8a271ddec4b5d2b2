-- The fan-out's common case in a script of its own: a plain notification
-- (severity normal; no tags, expiry or group) into the inboxes of a batch
-- of recipients, exactly once each, with the writes and the events
-- inbox_add.lua makes for it. It takes a recipient whose inbox is small and
-- either new or holding items and a log, when this add neither grows,
-- trims nor renews it and the event is not older than its top by more than
-- its millisecond; every other one it answers "more", having written
-- nothing of theirs, and the caller adds those by inbox_add.lua. What it
-- saves is that script's frame: it declares 7 keys a recipient, not 16, and
-- keeps its counts in locals. Joined behind inbox_item.lua, inbox_frame.lua
-- and delivery_schedule.lua.
-- KEYS: 7 per recipient (package inbox's plainKeys), one recipient after
-- the other: inbox:{u}, inbox:counts:{u}, unread_count:{u},
-- settings:muted:{u}, inbox:deleted:{u}, inbox:order:{u}, user:seq:{u};
-- with deliveries (ARGV[13]) two more each, as delivery_schedule.lua lists
-- them.
-- ARGV[1..8]: see inbox_frame.lua, but ARGV[4] (the channels follow):
--          "1" when a live event nobody hears may go unsent (PUBSUB
--          NUMSUB counts every listener: no pattern listens), else ""
--          (below: heard)
-- ARGV[9]  notificationId
-- ARGV[10] event type
-- ARGV[11] the item's own JSON: {"notificationId",…,"timestamp"}
-- ARGV[12] the event's time in ms (its stream id's ms)
-- ARGV[13..17] the deliveries beyond the tab to schedule (delivery_schedule.lua)
-- ARGV[18..] each recipient's channel, user:{u}, in the order of KEYS
-- Returns one of "muted", "dup", "old", "new" or "more" per recipient;
-- with deliveries, then per recipient the earliest due time (ms) of this
-- notification's deliveries, or "" when none is due (or it is "more").
local id, typ, own, ms = ARGV[9], ARGV[10], ARGV[11], tonumber(ARGV[12])
local value = own -- as inbox_add.lua's: a reference when the body is kept once
if ARGV[8] == '2' then value = '' end
local head = item_head(own, 'normal', '', 'null')

-- heard reports whether a stream listens on channel. One that subscribes
-- later replays the log from its position once its subscription is
-- confirmed (hub/channels.go), so what it replays holds every entry whose
-- event went unsent; most of a big fan-out's people have no stream open,
-- and their event is not built at all.
local function heard(channel)
  if ARGV[4] ~= '1' then return true end
  local n
  if ARGV[5] == '1' then n = redis.call('PUBSUB', 'SHARDNUMSUB', channel) else n = redis.call('PUBSUB', 'NUMSUB', channel) end
  return n[2] > 0
end

-- add adds the notification to the inbox of the recipient whose keys follow
-- KEYS[b] and whose channel is channel, or answers "more".
local function add(b, channel)
  local k_items, k_counts, k_unread, k_muted, k_deleted, k_order, k_oldseq =
    KEYS[b + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4], KEYS[b + 5], KEYS[b + 6], KEYS[b + 7]
  if redis.call('SISMEMBER', k_muted, typ) == 1 then return 'muted' end
  if ms < NOW - RETENTION then return 'old' end
  local c = redis.call('HMGET', k_counts, unpack(SMALL_FIELDS)) -- k v i u n a z q t
  local v, vis, unr, uns = tonumber(c[2]), tonumber(c[3] or '0'), tonumber(c[4] or '0'), tonumber(c[5] or '0')
  local arc, snz, q, top = tonumber(c[6] or '0'), tonumber(c[7] or '0'), tonumber(c[8]), tonumber(c[9])
  local fresh = not c[1] -- no small inbox: a new one, or none of this case
  local at = NOW -- the log entry's time
  if fresh then
    -- neither counts (v is in the first write of any change) nor an order
    -- (an older hub's), nor an older hub's log to go on from, nor ids that
    -- must not come back
    if v or ARGV[8] == '' or redis.call('EXISTS', k_order, k_oldseq, k_deleted) > 0 then return 'more' end
    v, q, top = 1, 0, 0 -- the counts' first version (inbox_order.lua's ensure)
  else
    local items = vis + arc + snz
    if not (v and q and top and tonumber(c[1]) == PERIOD and items > 0 and items < SMALL_ITEMS and
        items < MAX_ITEMS) then
      return 'more'
    end
    -- the entry before: its time, which this one's does not go below
    local e = redis.call('HGET', k_counts, '~' .. num(q))
    if not e then return 'more' end -- in inbox:log (too long for the counts)
    at = math.max(NOW, parse_entry(e) or 0)
  end
  local seq, score = q + 1, ms * 1024
  if seq > LOG_MAX or seq > SMALL_LOG or top >= score + 1024 or vis < 0 or unr < 0 or uns < 0 then return 'more' end
  if top >= score then score = top + 1 end
  v, vis, unr, uns = v + 1, vis + 1, unr + 1, uns + 1
  local entry = log_stamp(at, id) .. '\t' .. counts_line(v, vis, unr, uns, arc, snz) .. '\tc\t' .. id
  if #entry > 60 then return 'more' end -- for inbox:log
  if (not fresh and redis.call('ZSCORE', k_deleted, id)) or
      redis.call('HSETNX', k_items, id, num(score - id_score(id)) .. value) == 0 then
    return 'dup'
  end
  if fresh then
    redis.call('HSET', k_counts, 'v', v, 'i', vis, 'u', unr, 'n', uns, 't', score, 'q', seq, '~' .. num(seq), entry,
      'k', PERIOD)
    redis.call('EXPIRE', k_items, RETENTION_SECS)
    redis.call('EXPIRE', k_counts, RETENTION_SECS)
    -- what an older hub left in unread_count counted nothing that is here
    redis.call('SET', k_unread, unr, 'EX', RETENTION_SECS)
  else
    redis.call('HSET', k_counts, 'v', v, 'i', vis, 'u', unr, 'n', uns, 't', score, 'q', seq, '~' .. num(seq), entry)
    redis.call('INCRBY', k_unread, 1)
  end
  if heard(channel) then
    log_send(channel, at, seq, 'notification.created',
      created_data(head, 'null', score, unr, plain_counts_json(v, vis, unr, uns, arc, snz)))
  end
  return 'new'
end

-- The body, kept once for every item that shows it (inbox_add.lua).
if value == '' then redis.call('SET', BODIES .. id, own, 'EX', BODY_SECS) end

-- Deliveries beyond the tab (delivery_schedule.lua, joined in front).
local stride = 7
local plan = schedule_plan(13)
if plan then stride = 9 end
local ev = {id = id, typ = typ, ms = ms, critical = 0, own = own, now = NOW}

local out, dues = {}, {}
for i = 0, #KEYS / stride - 1 do
  local b = i * stride
  local kind = add(b, ARGV[18 + i])
  out[#out + 1] = kind
  if plan then
    local due = ''
    if kind ~= 'more' then
      local target = ''
      if kind == 'new' then target = id end
      due = schedule(KEYS[b + 8], KEYS[b + 9], ev, kind, target)
    end
    dues[#dues + 1] = due
  end
end
for _, d in ipairs(dues) do out[#out + 1] = d end
return out
