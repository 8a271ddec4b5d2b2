-- Who follows a topic, in id order: the shared head of the topic scripts
-- (lua.go joins it in front of each). A topic's keys share the hash tag
-- {t:<topicKey>}, so a script may touch them together; a follower's own
-- list (topics:{u}) is another slot's, written by topic_user.lua.
-- Followers are kept in chunks of at most CHUNK_MAX, each a field of one
-- hash whose value lists its followers ascending, "<id>:<seq>,…", where seq
-- numbers the follow (a publish reaches those at or under the topic's seq
-- when it was accepted: later followers get nothing). The index orders the
-- chunks by the lowest id each may hold; the first's is 0, so every id has
-- its chunk. A follower costs ~16 bytes here.
-- KEYS[1] topic:{t:<key>}           hash  n: followers, s: the last follow's seq, c: the last chunk's id
-- KEYS[2] topic:index:{t:<key>}     zset  chunk id, scored by the lowest id it holds
-- KEYS[3] topic:followers:{t:<key>} hash  chunk id -> "<id>:<seq>,…", ids ascending
local K_META, K_INDEX, K_CHUNKS = KEYS[1], KEYS[2], KEYS[3]
local CHUNK_MAX = 128

-- read is chunk c's followers: their ids and seqs, ascending (lists).
local function read(c)
  local ids, seqs = {}, {}
  for id, seq in string.gmatch(redis.call('HGET', K_CHUNKS, c) or '', '(%d+):(%d+)') do
    ids[#ids + 1], seqs[#seqs + 1] = tonumber(id), seq
  end
  return ids, seqs
end

-- write keeps chunk c's followers (ids, seqs); an empty chunk goes from the
-- index, its place to the chunk below it or, the first's, above it.
local function write(c, ids, seqs)
  if #ids > 0 then
    local parts = {}
    for i, id in ipairs(ids) do parts[i] = string.format('%d:%s', id, seqs[i]) end
    redis.call('HSET', K_CHUNKS, c, table.concat(parts, ','))
    return
  end
  redis.call('HDEL', K_CHUNKS, c)
  if tonumber(redis.call('ZSCORE', K_INDEX, c)) == 0 then
    local next = redis.call('ZRANGE', K_INDEX, 1, 1)
    if next[1] then redis.call('ZADD', K_INDEX, 0, next[1]) end
  end
  redis.call('ZREM', K_INDEX, c)
end

-- chunk_of is the chunk where id belongs: its id, and the lowest id of the
-- chunk after it (nil: none); nil when the topic has none, unless make,
-- which gives an empty topic its first chunk.
local function chunk_of(id, make)
  local c = redis.call('ZREVRANGEBYSCORE', K_INDEX, id, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if not c[1] then
    if not make then return nil end
    local first = tostring(redis.call('HINCRBY', K_META, 'c', 1))
    redis.call('ZADD', K_INDEX, 0, first)
    return first, nil
  end
  local next = redis.call('ZRANGEBYSCORE', K_INDEX, '(' .. c[2], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  return c[1], tonumber(next[2])
end

-- find is where id is, or goes, in ids (ascending): its index, and whether
-- it is there.
local function find(ids, id)
  local lo, hi = 1, #ids + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if ids[mid] < id then lo = mid + 1 else hi = mid end
  end
  return lo, ids[lo] == id
end

-- walk calls change(ids, seqs, id) for each user id of ARGV, ascending,
-- with the followers of the chunk where it belongs (read once for the ids
-- it holds, written once after them when changed). change returns whether
-- it changed them and, when it moved the upper ones to a chunk of their
-- own, the lowest id it moved. make gives an empty topic its first chunk;
-- without it, a topic without chunks ends the walk.
local function walk(make, change)
  local c, hi, ids, seqs, dirty
  for i = 1, #ARGV do
    local id = tonumber(ARGV[i])
    if not c or (hi and id >= hi) then
      if dirty then write(c, ids, seqs) end
      c, hi = chunk_of(id, make)
      if not c then return end
      ids, seqs = read(c)
      dirty = false
    end
    local changed, moved = change(ids, seqs, id)
    dirty = dirty or changed
    if moved then hi = moved end
  end
  if dirty then write(c, ids, seqs) end
end
