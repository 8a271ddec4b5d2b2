-- Adds followers to a topic, each once: one who follows already keeps the
-- seq of their first follow. A chunk past CHUNK_MAX splits in two.
-- KEYS: as topic_lib.lua lists them.
-- ARGV: the user ids, ascending and distinct.
-- Returns {added, followers}.
local s = tonumber(redis.call('HGET', K_META, 's') or '0')
local added = 0
walk(true, function(ids, seqs, id)
  local at, there = find(ids, id)
  if there then return false end
  s, added = s + 1, added + 1
  table.insert(ids, at, id)
  table.insert(seqs, at, tostring(s))
  if #ids <= CHUNK_MAX then return true end
  -- the upper half to a chunk of its own
  local half, upper, useqs = math.floor(#ids / 2), {}, {}
  for j = half + 1, #ids do upper[#upper + 1], useqs[#useqs + 1] = ids[j], seqs[j] end
  for j = #ids, half + 1, -1 do ids[j], seqs[j] = nil, nil end
  local c2 = tostring(redis.call('HINCRBY', K_META, 'c', 1))
  redis.call('ZADD', K_INDEX, upper[1], c2)
  write(c2, upper, useqs)
  return true, upper[1]
end)
local n = tonumber(redis.call('HGET', K_META, 'n') or '0')
if added > 0 then
  n = redis.call('HINCRBY', K_META, 'n', added)
  redis.call('HSET', K_META, 's', s)
end
return {added, n}
