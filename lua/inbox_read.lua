-- Mark notifications read. One id: idempotent, the first readAt stays. All
-- (read-all): every unread entry up to a bound. What changed goes to the
-- write-behind buffer and, as one notification.read, to the user's log.
-- KEYS and ARGV[1..5]: see inbox_lib.lua.
-- ARGV[6] "one" or "all"
-- ARGV[7] readAt, RFC 3339
-- ARGV[8] one: the notificationId; all: the upTo notificationId or ""
-- ARGV[9] all: score bound used when upTo is no longer in the inbox
-- Returns one: {"missing"} or {"ok", readAt}; all: {marked, unread}.
trim()
local read_at = ARGV[7]
if ARGV[6] == 'one' then
  local id = ARGV[8]
  if redis.call('HEXISTS', KEYS[1], id) == 0 then return {'missing'} end
  if not mark_read(id, read_at) then
    return {'ok', redis.call('HGET', KEYS[3], id)}
  end
  log('notification.read', read_event({id}, read_at))
  return {'ok', read_at}
end
local bound = '+inf'
if ARGV[8] ~= '' then
  bound = redis.call('ZSCORE', KEYS[2], ARGV[8]) or ARGV[9]
end
local marked = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', bound)) do
  if mark_read(id, read_at) then marked[#marked + 1] = id end
end
if #marked > 0 then log('notification.read', read_event(marked, read_at)) end
return {#marked, unread()}
