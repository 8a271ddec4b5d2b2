-- Removes followers from a topic; one who does not follow is left alone.
-- A chunk left empty goes (the topic keeps its seq: a follow after it is
-- still later than every publish before).
-- KEYS: as topic_lib.lua lists them.
-- ARGV: the user ids, ascending and distinct.
-- Returns {removed, followers}.
local removed = 0
walk(false, function(ids, seqs, id)
  local at, there = find(ids, id)
  if not there then return false end
  table.remove(ids, at)
  table.remove(seqs, at)
  removed = removed + 1
  return true
end)
local n = tonumber(redis.call('HGET', K_META, 'n') or '0')
if removed > 0 then n = redis.call('HINCRBY', K_META, 'n', -removed) end
return {removed, n}
