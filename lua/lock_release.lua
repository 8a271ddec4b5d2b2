-- Release a lock only if the caller owns it (compare and delete).
-- KEYS[1]  lock key (lock:<name>)
-- ARGV[1]  owner id
-- Returns 1 when released, 0 when the lock is gone or held by another owner.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
