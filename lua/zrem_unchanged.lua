-- Remove a member from an index zset, or give it a new score, only if its
-- score is what the caller read: a writer that bumped it meanwhile (a new
-- publish, a new read, an earlier timer) keeps it as that writer left it.
-- Used for outbox:rooms, read_pending:{…} and inbox_timers:{…}.
-- KEYS[1]  the zset
-- ARGV[1]  member
-- ARGV[2]  the score the caller read, as Redis wrote it
-- ARGV[3]  optional: the new score; absent, the member is removed
if redis.call('ZSCORE', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
if ARGV[3] and ARGV[3] ~= '' then
  return redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return redis.call('ZREM', KEYS[1], ARGV[1])
