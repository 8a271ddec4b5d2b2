-- Take a lock if it is free.
-- KEYS[1]  lock key (lock:<name>)
-- ARGV[1]  owner id (unique per holder)
-- ARGV[2]  ttl in seconds
-- Returns 1 when acquired, 0 when someone else holds it.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', tonumber(ARGV[2])) then
  return 1
end
return 0
