-- The numbers a topic publish counts its recipients from, taken at once:
-- the topic's followers and its last follow's seq (the snapshot: a later
-- follower gets nothing), and how many of some user ids (the excluded and
-- the direct recipients) were among those followers. Ids beyond one call's
-- share are counted by more calls against the first's snapshot; each
-- checks that nobody left the topic since (n - s moves only when someone
-- leaves: a follow adds one to both).
-- KEYS: as topic_lib.lua lists them.
-- ARGV[1] the snapshot's seq, "" on the first call (taken now)
-- ARGV[2] the first call's n - s, "" on the first call
-- ARGV[3..] user ids, ascending and distinct
-- Returns {n, s, among}, or {-1} when someone left since the first call.
local n = tonumber(redis.call('HGET', K_META, 'n') or '0')
local s = tonumber(redis.call('HGET', K_META, 's') or '0')
if ARGV[2] ~= '' and n - s ~= tonumber(ARGV[2]) then return {-1} end
local snap = tonumber(ARGV[1]) or s
local among, c, hi, ids, seqs = 0, nil, nil, nil, nil
for i = 3, #ARGV do
  local id = tonumber(ARGV[i])
  if not c or (hi and id >= hi) then
    c, hi = chunk_of(id, false)
    if not c then break end
    ids, seqs = read(c)
  end
  local at, there = find(ids, id)
  if there and tonumber(seqs[at]) <= snap then among = among + 1 end
end
return {n, s, among}
