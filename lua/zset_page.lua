-- One page of a sorted set in its own order (score, then member bytewise)
-- strictly after a cursor (score, member), with scores. The cursor's place
-- is found by a binary search among the entries of its score, so a page
-- moves on however many entries share one score, and the cursor's member
-- need not be in the set any more. Used for deliveries_dead:{dx…}.
-- KEYS[1]  the zset
-- ARGV[1]  the cursor's score as Redis writes it ('' : from the first entry)
-- ARGV[2]  the cursor's member
-- ARGV[3]  how many entries at most
local n = tonumber(ARGV[3])
local start = 0
-- Bytewise, as Redis orders members (Lua's own < follows the locale).
local function after(m, cursor)
  local len = math.min(#m, #cursor)
  for i = 1, len do
    local a, b = m:byte(i), cursor:byte(i)
    if a ~= b then return a > b end
  end
  return #m > #cursor
end
if ARGV[1] ~= '' then
  local lo = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[1])
  local hi = lo + redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[1])
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', KEYS[1], mid, mid)[1]
    if after(m, ARGV[2]) then hi = mid else lo = mid + 1 end
  end
  start = lo
end
return redis.call('ZRANGE', KEYS[1], start, start + n - 1, 'WITHSCORES')
