-- Finish what one read of ingest partitions published: keep the dead
-- entries, acknowledge every finished entry, and drop what each stream no
-- longer needs. One call serves several partitions on one Redis (one on a
-- cluster, where partitions lie in different slots).
-- KEYS     per partition: its stream (ingest:{p}), its dead entries (ingest:dead:{p})
-- ARGV[1]  consumer group
-- ARGV[2]  dead entries older than this (ms) are dropped
-- ARGV[3]  at most this many dead entries are kept per partition (approximately)
-- then per partition, in the order of KEYS:
--   trim the stream below this id ("" to keep it whole): the first entry not
--   finished, so that the stream's length is what is left to do;
--   n, the finished entry ids; d, the dead entries;
--   the n finished entry ids, in stream order;
--   five per dead entry: its id, the entry (its event field), code, message,
--   when (RFC 3339).
-- A dead entry is kept under its own id; an id at or below the dead
-- stream's last one is an entry kept already (read twice) and is skipped.
-- Returns the number of entries acknowledged.
local at = 4
local acked = 0
for k = 1, #KEYS, 2 do
  local stream, dead = KEYS[k], KEYS[k + 1]
  local trim, n, d = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local ids = at + 3
  at = ids + n
  local kept = 0
  for j = 0, d - 1 do
    local b = at + 5 * j
    local ok = redis.pcall('XADD', dead, ARGV[b], 'entry', ARGV[b + 1], 'code', ARGV[b + 2],
      'message', ARGV[b + 3], 'at', ARGV[b + 4])
    if type(ok) ~= 'table' or not ok.err then
      kept = kept + 1
    end
  end
  at = at + 5 * d
  if kept > 0 then
    redis.call('XTRIM', dead, 'MINID', '~', ARGV[2])
    redis.call('XTRIM', dead, 'MAXLEN', '~', ARGV[3])
  end
  local i = 0
  while i < n do
    local last = math.min(i + 1000, n)
    local chunk = {}
    for j = i, last - 1 do
      chunk[#chunk + 1] = ARGV[ids + j]
    end
    acked = acked + redis.call('XACK', stream, ARGV[1], unpack(chunk))
    i = last
  end
  if trim ~= '' then
    redis.call('XTRIM', stream, 'MINID', trim)
  end
end
return acked
