-- Remove a member from an index zset only if its score is what the caller
-- read: a writer that bumped it meanwhile (a new publish, a new read) keeps
-- it listed. Used for outbox:rooms and read_pending:{…}.
-- KEYS[1]  the zset
-- ARGV[1]  member
-- ARGV[2]  the score the caller read, as Redis wrote it
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
