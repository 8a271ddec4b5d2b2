-- Read a user's inbox after dropping what aged out: the unread count, or one
-- page of the list, newest first.
-- KEYS and ARGV[1..5]: see inbox_lib.lua.
-- ARGV[6] "count" or "list"
-- ARGV[7] list: before (exclusive), a notificationId, or ""
-- ARGV[8] list: score bound used when before is no longer in the inbox
-- ARGV[9] list: page size
-- Returns count: unread; list: {hasMore, id1, item1, readAt1, id2, …}
-- (readAt false when unread).
trim()
if ARGV[6] == 'count' then return unread() end
local bound = '+inf'
if ARGV[7] ~= '' then
  local s = redis.call('ZSCORE', KEYS[2], ARGV[7])
  bound = '(' .. (s or ARGV[8])
end
local limit = tonumber(ARGV[9])
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[2], bound, '-inf', 'LIMIT', 0, limit + 1)
local out = {0}
if #ids > limit then out[1] = 1 end
for i = 1, math.min(#ids, limit) do
  local id = ids[i]
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', KEYS[1], id) or '{}'
  out[#out + 1] = redis.call('HGET', KEYS[3], id) or false
end
return out
