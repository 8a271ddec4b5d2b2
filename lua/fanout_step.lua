-- Records one step of a fan-out by the instance that holds its lease: the
-- followers it reached, where the walk is, and its end. A step whose lease
-- lapsed, or whose start is not where the record is (another instance went
-- on), records nothing: its writes were idempotent, and whoever holds the
-- fan-out now does them again.
-- KEYS[1] fanout:{f:<id>}        the record
-- KEYS[2] fanout:lease:{f:<id>}  who runs it
-- ARGV[1] the holder             ARGV[2] the lease's ttl (ms)
-- ARGV[3] where the step began   ARGV[4] where it ended
-- ARGV[5] followers it reached   ARGV[6] "1": the walk is over
-- ARGV[7] now (ms)               ARGV[8] how long a finished record is kept (ms)
-- Returns the state after: running, done, canceled, or lost.
local rec, lease = KEYS[1], KEYS[2]
if redis.call('GET', lease) ~= ARGV[1] then return 'lost' end
local state, pos = unpack(redis.call('HMGET', rec, 'state', 'pos'))
if not state or pos ~= ARGV[3] then return 'lost' end
-- reached even when canceled meanwhile: these already have the item
redis.call('HINCRBY', rec, 'reached', ARGV[5])
if state ~= 'running' then
  redis.call('DEL', lease)
  return state
end
redis.call('HSET', rec, 'pos', ARGV[4])
if ARGV[6] ~= '1' then
  redis.call('PEXPIRE', lease, ARGV[2])
  return 'running'
end
redis.call('HSET', rec, 'state', 'done', 'finishedAt', ARGV[7])
redis.call('HDEL', rec, 'notice', 'skip')
redis.call('PEXPIRE', rec, ARGV[8])
redis.call('DEL', lease)
return 'done'
