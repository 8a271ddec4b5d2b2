-- The user's log: every change of a user's inbox is one entry, numbered
-- (seq) and sent live on the user's channel; a user stream resumes from it
-- (inbox_log_read.lua). Joined behind inbox_order.lua, whose keys and counts
-- it uses. An entry costs what names it, not what the event carried: a hash
-- field seq -> "<ms>\t<counts>\t<what>" in inbox:log:{u} (a small inbox's,
-- up to 60 bytes, "~<seq>" in inbox:counts:{u}), where counts is the counts of its
-- time (counts_snapshot) and what is one of
--   c\t<id>                  notification.created (the item, as it is when read)
--   r\t<readAt>\t<ids>       notification.read
--   d\t<reason>\t<ids>       notification.deleted
--   u\t<ids>                 notification.updated, the items as they are when read
--   f\t<action>\t<filter>    notification.updated of more than 100 items
-- ids are comma separated. The event's id is "<ms>-<seq>": time-ordered as
-- a stream id is, and its seq inside.

-- counts_snapshot is the counts in an entry: "v,visible,unread,unseen"
-- and ",archived,snoozed" unless both are 0, or their JSON while something
-- counts by tag or severity.
local function counts_snapshot()
  load_counts()
  if C_grouped then return counts_json() end
  return counts_line(C.v or 0, C.visible or 0, C.unread or 0, C.unseen or 0, C.archived or 0, C.snoozed or 0)
end

-- last_seq is the log's last seq, kept with the counts (q). A user whose
-- log an older hub kept (a stream, user:log:{u}) goes on from that one's
-- seq, and the stream is dropped: a stream resuming across the two is told
-- of a gap (its id is not in this log).
local function last_seq()
  load_counts()
  if C.q then return C.q end
  local old = tonumber(redis.call('GET', K_OLDSEQ) or '0')
  if old > 0 then redis.call('UNLINK', K_OLDSEQ, K_OLDLOG) end
  return old
end

-- log_entry reads entry seq: its ms (a number), counts snapshot and what,
-- or nil. A created entry's ms may be kept as "+<ms>" after its item's own.
local function log_entry(seq)
  local e
  if SMALL then e = redis.call('HGET', K_COUNTS, '~' .. seq) end
  e = e or redis.call('HGET', K_LOG, seq)
  if not e then return nil end
  return parse_entry(e)
end

-- log_ms is the time of entry seq: now, or the entry before it's when the
-- clock stepped back (ids keep rising). A small inbox keeps no lm: its log
-- is at hand.
local function log_ms(seq)
  if not C.lm and SMALL and seq > 1 then C.lm = log_entry(seq - 1) end
  return math.max(NOW, C.lm or 0)
end

-- log appends one entry (what, see above) to the user's log and publishes
-- its event (typ, data) live, with the entry's id and seq. The oldest entry
-- beyond LOG_MAX goes.
local function log(typ, what, data)
  local first = not (C and C.q) -- this log's first entry: its key is new
  local seq = last_seq() + 1
  local ms = log_ms(seq)
  C.q, C.lm, C_dirty.q, C_dirty.lm = seq, ms, true, true
  if SMALL and math.min(seq, LOG_MAX) > SMALL_LOG then grow() end
  local created
  if string.byte(what, 1) == 99 then created = string.sub(what, 3) end -- "c\t<id>"
  local entry = log_stamp(ms, created) .. '\t' .. counts_snapshot() .. '\t' .. what
  if SMALL and #entry <= 60 then
    -- written with the counts and the seq: one write (flush_counts)
    C_extra[#C_extra + 1] = '~' .. num(seq)
    C_extra[#C_extra + 1] = entry
  else
    redis.call('HSET', K_LOG, seq, entry)
    -- a key made after keep ran takes its expiry now (a small inbox's
    -- entry too long for its counts may make it)
    if kept_now or first or SMALL then redis.call('EXPIRE', K_LOG, RETENTION_SECS) end
  end
  if seq > LOG_MAX then
    if SMALL then
      local gone, pending = '~' .. num(seq - LOG_MAX), false
      for i = 1, #C_extra, 2 do -- not written yet (a log shorter than a script's entries)
        if C_extra[i] == gone then
          table.remove(C_extra, i); table.remove(C_extra, i)
          pending = true
          break
        end
      end
      -- an entry too long for the counts is in inbox:log
      if not pending and redis.call('HDEL', K_COUNTS, gone) == 0 then redis.call('HDEL', K_LOG, seq - LOG_MAX) end
    else
      redis.call('HDEL', K_LOG, seq - LOG_MAX)
    end
  end
  return log_send(CHANNEL, ms, seq, typ, data)
end

local function quoted_ids(ids)
  local q = {}
  for i, id in ipairs(ids) do q[i] = '"' .. id .. '"' end
  return '[' .. table.concat(q, ',') .. ']'
end

-- keep renews the keys' expiry (the retention): on every change (but the
-- fan-out's, FANOUT: once per KEEP_PERIOD); the counts remember when (kept).
-- keep_due says whether it is to run, and marks the counts; keep runs after
-- the script's writes, so that a key they made takes its expiry.
local function keep_due()
  if C.kept == PERIOD and FANOUT then return false end
  if C.kept ~= PERIOD then C.kept, C_dirty.kept = PERIOD, true end
  return true
end
-- fresh_keys, when set (inbox_add.lua), lists the keys besides inbox:{u},
-- its counts and unread_count that a fan-out into a new inbox made.
local fresh_keys
local function keep()
  -- every key but the receipts queue (K_PENDING) and the mutes (K_MUTED);
  -- of a new inbox, those this script may have made (a call each saved)
  local keys
  if FRESH and fresh_keys then
    keys = fresh_keys()
    keys[#keys + 1], keys[#keys + 2], keys[#keys + 3] = K_ITEMS, K_COUNTS, K_UNREAD
  else
    keys = {K_ITEMS, K_COUNTS, K_UNREAD, K_LOG, K_META, K_DUE, K_DELETED, K_GROUPS}
  end
  if not FRESH then
    keys[#keys + 1], keys[#keys + 2], keys[#keys + 3] = K_READ, K_SEEN, K_ARCHIVED
    if not SMALL then keys[#keys + 1] = K_ORDER end
  end
  for _, k in ipairs(keys) do redis.call('EXPIRE', k, RETENTION_SECS) end
  kept_now = true
end

-- finish records that the inbox changed (a new version, unread_count, the
-- keys' expiry) and sends this script's log events, each with the counts.
-- action names the change of updated items (seen, archive, …); filter, when
-- more than 100 changed, is sent instead of the items. created, when
-- given, logs the item the script added, last. The counts, with a small
-- inbox's log entries, are written once, at the end.
local REASONS = {'retention', 'expired', 'deleted'}
local function finish(action, filter, created)
  if not dirty then
    flush_counts() -- a recount, if nothing else
    return
  end
  load_counts()
  bump('v', 1)
  UNREAD = count('unread')
  local counts
  if next(removed) or #read_ids > 0 or #updated > 0 then counts = counts_json() end
  for _, reason in ipairs(REASONS) do
    local ids = removed[reason]
    if ids then
      log('notification.deleted', 'd\t' .. reason .. '\t' .. table.concat(ids, ','),
        '{"notificationIds":' .. quoted_ids(ids) .. ',"reason":"' .. reason .. '","counts":' .. counts .. '}')
    end
  end
  if #read_ids > 0 then
    log('notification.read', 'r\t' .. NOW_ISO .. '\t' .. table.concat(read_ids, ','),
      '{"notificationIds":' .. quoted_ids(read_ids) .. ',"readAt":"' .. NOW_ISO ..
      '","unread":' .. count('unread') .. ',"counts":' .. counts .. '}')
  end
  if #updated > 0 then
    local body, what
    if #updated > 100 then
      body = '"filter":' .. (filter or 'null') .. ',"action":"' .. (action or 'update') .. '"'
      what = 'f\t' .. (action or 'update') .. '\t' .. (filter or 'null')
    else
      local items = {}
      for _, id in ipairs(updated) do
        local item = item_json(id)
        if item then items[#items + 1] = item end
      end
      body = '"notifications":[' .. table.concat(items, ',') .. ']'
      what = 'u\t' .. table.concat(updated, ',')
    end
    log('notification.updated', what, '{' .. body .. ',"counts":' .. counts .. '}')
  end
  if created then created() end
  local renew = keep_due()
  flush_counts()
  if renew then keep() end
end
