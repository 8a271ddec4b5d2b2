-- Removes followers from a topic; one who does not follow is left alone.
-- A chunk left empty goes (the topic keeps its seq: a follow after it is
-- still later than every publish before).
-- KEYS: as topic_lib.lua lists them.
-- ARGV: the user ids, ascending and distinct.
-- Returns {removed, followers}.
local removed = 0
local c, hi, ids, seqs, dirty
for i = 1, #ARGV do
  local id = tonumber(ARGV[i])
  if not c or (hi and id >= hi) then
    if dirty then write(c, ids, seqs) end
    c, hi = chunk_of(id, false)
    if not c then break end -- no follower at all
    ids, seqs = read(c)
    dirty = false
  end
  local at, there = find(ids, id)
  if there then
    table.remove(ids, at)
    table.remove(seqs, at)
    removed, dirty = removed + 1, true
  end
end
if dirty then write(c, ids, seqs) end
local n = tonumber(redis.call('HGET', K_META, 'n') or '0')
if removed > 0 then n = redis.call('HINCRBY', K_META, 'n', -removed) end
return {removed, n}
