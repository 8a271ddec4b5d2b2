-- Finish what one read of an ingest partition published: keep the dead
-- entries, acknowledge every finished entry, and drop what the stream no
-- longer needs.
-- KEYS[1]  the partition's stream (ingest:{p})
-- KEYS[2]  its dead entries (ingest:dead:{p})
-- ARGV[1]  consumer group
-- ARGV[2]  trim the stream below this id ("" to keep it whole): the first
--          entry not finished, so the stream's length is what is left to do
-- ARGV[3]  dead entries older than this (ms) are dropped
-- ARGV[4]  at most this many dead entries are kept (approximately)
-- ARGV[5]  n: how many finished entry ids follow
-- ARGV[6..5+n]  the finished entry ids, in stream order
-- then five per dead entry: its id, the entry (its event field), code,
-- message, when (RFC 3339).
-- A dead entry is kept under its own id; an id at or below the dead
-- stream's last one is an entry kept already (read twice) and is skipped.
-- Returns the number of entries acknowledged.
local n = tonumber(ARGV[5])
local at = 6 + n
local dead = 0
while at + 4 <= #ARGV do
  local ok = redis.pcall('XADD', KEYS[2], ARGV[at], 'entry', ARGV[at + 1], 'code', ARGV[at + 2],
    'message', ARGV[at + 3], 'at', ARGV[at + 4])
  if type(ok) ~= 'table' or not ok.err then
    dead = dead + 1
  end
  at = at + 5
end
if dead > 0 then
  redis.call('XTRIM', KEYS[2], 'MINID', '~', ARGV[3])
  redis.call('XTRIM', KEYS[2], 'MAXLEN', '~', ARGV[4])
end
local acked = 0
local i = 1
while i <= n do
  local last = math.min(i + 999, n)
  local ids = {}
  for j = i, last do
    ids[#ids + 1] = ARGV[5 + j]
  end
  acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
  i = last + 1
end
if ARGV[2] ~= '' then
  redis.call('XTRIM', KEYS[1], 'MINID', ARGV[2])
end
return acked
