-- Delivery's records, and how a notification schedules them: the library of
-- delivery's that the inbox's add (inbox_add.lua) includes, so that an item
-- and its deliveries are written in one atomic step. The delivery scripts
-- (delivery_claim.lua, delivery_end.lua, …) keep the records from then on.
--
-- A record (delivery:{u} "<notificationId>|<channel>", JSON):
--   s state: scheduled, deferred, retrying, sending, sent, canceled, skipped, dead
--   r reason, due (ms), o the first due time (ms: the order of a user's
--   deliveries), n attempts, e the last error code, t updated (ms),
--   tg the inbox item it follows ("" when not in the inbox), ty event type,
--   cr 1 for severity critical, u unless (seen, read, none), off 1 for
--   onlyIfOffline, dg digestSecs, g the digest's send time, dk/dw dedupe key
--   and window (s), it the event's own item when not in the inbox,
--   ls the lease token while sending, ps the state before sending, hk the
--   hand-off's head record id once claimed (its Idempotency-Key, kept for
--   every attempt), tp the publish's traceparent when its trace was sampled.
-- Besides the records, delivery:{u} holds "digest|<channel>", the open
-- digest's send time, and "hol|<channel>", the retrying head of the
-- channel's queue (delivery_claim.lua).
--
-- The caller passes per recipient two keys (package delivery's ScheduleKeys):
--   delivery:{u}, delivery:due:{u}
-- and once five arguments (delivery.Plan's ScheduleArgs), read by
-- schedule_plan(i) from ARGV[i]:
--   ARGV[i]   the deliveries to schedule, JSON
--             [{"c":channel,"a":afterSecs,"u":unless,"o":onlyIfOffline 0/1,"d":digestSecs}],
--             or "" for none
--   ARGV[i+1] dedupeKey, or ""
--   ARGV[i+2] dedupeWindowSecs
--   ARGV[i+3] how long the delivery keys live after a write, in ms
--   ARGV[i+4] traceparent, or "": kept in the records (tp), so that their
--             hand-offs join the publish's trace
local S_PLAN, S_DKEY, S_DWIN, S_TTL, S_TP

-- schedule_plan reads the plan from ARGV[i..i+4]; it returns whether there
-- are deliveries to schedule.
local function schedule_plan(i)
  if ARGV[i] == '' then return false end
  S_PLAN = cjson.decode(ARGV[i])
  S_DKEY, S_DWIN, S_TTL, S_TP = ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4]
  return true
end

-- schedule writes one recipient's records of notification ev (id, typ, ms
-- its time, critical 0 or 1, own its item's JSON, now) into k_rec and k_due,
-- once (kind says what the inbox did: new, joined, muted, dup, old; target is
-- the item it landed in, "" when it is not in the inbox: a type muted in-app
-- keeps its deliveries, which carry the event's own fields). It returns the
-- earliest due time of the records, new or already there (a retry), or "".
local function schedule(k_rec, k_due, ev, kind, target)
  local earliest
  for _, r in ipairs(S_PLAN) do
    local rid = ev.id .. '|' .. r.c
    local due
    if redis.call('HEXISTS', k_rec, rid) == 1 then
      due = tonumber(redis.call('ZSCORE', k_due, rid) or nil)
    elseif kind == 'new' or kind == 'joined' or kind == 'muted' then
      due = ev.ms + r.a * 1000
      local rec = {s = 'scheduled', o = due, n = 0, t = ev.now, tg = target, ty = ev.typ, cr = ev.critical, u = r.u,
        off = r.o, dg = r.d}
      if r.d > 0 then
        -- A digest: the first delivery of the channel opens it, due when it
        -- closes; those falling due before then join it.
        local open = tonumber(redis.call('HGET', k_rec, 'digest|' .. r.c) or '0')
        if due > open then
          due = due + r.d * 1000
          redis.call('HSET', k_rec, 'digest|' .. r.c, due)
        else
          due = open
        end
        rec.g = due
      end
      if S_DKEY ~= '' then rec.dk, rec.dw = S_DKEY, S_DWIN end
      if target == '' then rec.it = ev.own end
      if S_TP ~= '' then rec.tp = S_TP end
      rec.due = due
      redis.call('HSET', k_rec, rid, cjson.encode(rec))
      redis.call('ZADD', k_due, due, rid)
    end
    if due and (not earliest or due < earliest) then earliest = due end
  end
  redis.call('PEXPIRE', k_rec, S_TTL)
  redis.call('PEXPIRE', k_due, S_TTL)
  if earliest then return string.format('%d', earliest) end
  return ''
end
