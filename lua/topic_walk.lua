-- One step of a topic publish's fan-out: the next followers in id order
-- who followed by the publish (seq at most the snapshot's).
-- KEYS: as topic_lib.lua lists them.
-- ARGV[1] after: the step starts above this id
-- ARGV[2] the snapshot's seq
-- ARGV[3] limit: the most followers the step looks at
-- Returns {more, last, id, …}: more 1 when followers may follow last (the
-- highest id looked at, after itself when none was), 0 when the walk is
-- over; then the ids the publish reaches.
local after, snap, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out, looked, last = {0, after}, 0, after
local c, hi = chunk_of(after + 1, false)
while c do
  local ids, seqs = read(c)
  for i, id in ipairs(ids) do
    if id > after then
      if looked == limit then
        out[1], out[2] = 1, last
        return out
      end
      looked, last = looked + 1, id
      if tonumber(seqs[i]) <= snap then out[#out + 1] = id end
    end
  end
  if not hi then break end
  c, hi = chunk_of(hi, false)
end
out[2] = last
return out
