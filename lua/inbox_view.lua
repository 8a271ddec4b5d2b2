-- Read a user's inbox once it is settled (inbox_lib.lua's settle): the
-- unread count, the counts, one page of a filtered list, or only the
-- settling (the timer worker's call for users with something due).
-- KEYS and ARGV[1..8]: see inbox_lib.lua.
-- ARGV[9]  "count", "counts", "list" or "settle"
-- ARGV[10..14] list: the filter (see filter_at)
-- ARGV[15] list: before (exclusive), a notificationId, or ""
-- ARGV[16] list: the score used when before is no longer listed
-- ARGV[17] list: page size
-- ARGV[18] list: the most items one page looks at
-- Returns count: unread; counts: their JSON; list: {hasMore, the id the next
-- page starts below (the last item looked at) or "", item JSON, …};
-- settle: {the next due time in ms or -1, items woken, items expired}.
settle()
finish()
local mode = ARGV[9]
if mode == 'count' then return count('unread') end
if mode == 'counts' then return counts_json() end
if mode == 'settle' then
  local due = redis.call('ZRANGE', K_DUE, 0, 0, 'WITHSCORES')
  local next = -1
  if due[2] then next = tonumber(due[2]) end
  return {next, #updated, #(removed.expired or {})}
end
local ids, more, last = scan(filter_at(10), bound_of(ARGV[15], ARGV[16], true), tonumber(ARGV[17]), tonumber(ARGV[18]))
local out = {0, ''}
if more then out[1], out[2] = 1, last or '' end
for _, id in ipairs(ids) do out[#out + 1] = item_json(id) end
return out
