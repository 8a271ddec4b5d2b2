-- Read a user's inbox once it is settled (inbox_lib.lua's settle): the
-- unread count, the counts, one page of a filtered list, or only the
-- settling (the timer worker's call for users with something due).
-- KEYS and ARGV[1..7]: see inbox_lib.lua.
-- ARGV[8]  "count", "counts", "list" or "settle"
-- ARGV[9..13] list: the filter (see filter_at)
-- ARGV[14] list: before (exclusive), a notificationId, or ""
-- ARGV[15] list: the score used when before is no longer listed
-- ARGV[16] list: page size
-- ARGV[17] list: the most items one page looks at
-- Returns count: unread; counts: their JSON; list: {hasMore, the id the next
-- page starts below (the last item looked at) or "", item JSON, …};
-- settle: {the next due time in ms or -1, items woken, items expired}.
settle()
finish()
local mode = ARGV[8]
if mode == 'count' then return count('unread') end
if mode == 'counts' then return counts_json() end
if mode == 'settle' then
  local due = redis.call('ZRANGE', K_DUE, 0, 0, 'WITHSCORES')
  local next = -1
  if due[2] then next = tonumber(due[2]) end
  return {next, #updated, #(removed.expired or {})}
end
local ids, more, last = scan(filter_at(9), bound_of(ARGV[14], ARGV[15], true), tonumber(ARGV[16]), tonumber(ARGV[17]))
local out = {0, ''}
if more then out[1], out[2] = 1, last or '' end
for _, id in ipairs(ids) do out[#out + 1] = item_json(id) end
return out
