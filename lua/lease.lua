-- Take a lease if it is free, or renew it if the caller holds it.
-- KEYS[1]  lease key (lock:<name>)
-- ARGV[1]  holder id
-- ARGV[2]  ttl in milliseconds
-- Returns 1 when the caller holds it now, 0 when another holder does.
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if cur then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
