-- Add one notification to a user's inbox, exactly once: a muted type is
-- skipped; an id already there, or deleted or expired before, is a
-- duplicate (a retry); a new one is counted and goes to the user's log and
-- channel as notification.created.
-- KEYS and ARGV[1..6]: see inbox_lib.lua.
-- ARGV[7]  notificationId
-- ARGV[8]  event type
-- ARGV[9]  the item's own JSON: {"notificationId",…,"timestamp"}
-- ARGV[10] the event's time in ms (its stream id's ms)
-- ARGV[11] "severity\ttag,tag\texpiresAt"
-- ARGV[12] expiresAt in ms, or ""
-- Returns {"muted"}, {"dup"}, {"old"} (older than the retention) or {"new", unread}.
if redis.call('SISMEMBER', K_MUTED, ARGV[8]) == 1 then return {'muted'} end
local id = ARGV[7]
settle()
if redis.call('HEXISTS', K_ITEMS, id) == 1 or redis.call('ZSCORE', K_DELETED, id) then
  finish()
  return {'dup'}
end
if tonumber(ARGV[10]) < NOW - RETENTION then
  finish()
  return {'old'}
end
local score = top_score(tonumber(ARGV[10]))
redis.call('HSET', K_ITEMS, id, ARGV[9])
redis.call('HSET', K_META, id, ARGV[11])
redis.call('ZADD', K_ORDER, score, id)
if ARGV[12] ~= '' then redis.call('ZADD', K_DUE, ARGV[12], 'x:' .. id) end
contrib(id, 1)
dirty = true
trim()
if redis.call('HEXISTS', K_ITEMS, id) == 0 then
  finish()
  return {'old'}
end
finish()
log('notification.created', string.sub(item_json(id), 1, -2) .. ',"unread":' .. count('unread') ..
  ',"counts":' .. counts_json() .. '}')
return {'new', count('unread')}
