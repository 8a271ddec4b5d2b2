-- Cancels a running fan-out: nobody it has not reached gets the item (a
-- step under way when it lands is recorded, reached, by its runner).
-- KEYS[1] fanout:{f:<id>}  the record
-- ARGV[1] now (ms)         ARGV[2] how long a finished record is kept (ms)
-- Returns the state after (canceled, or done when it had finished), or
-- "" for no such fan-out.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return '' end
if state ~= 'running' then return state end
redis.call('HSET', KEYS[1], 'state', 'canceled', 'finishedAt', ARGV[1])
redis.call('HDEL', KEYS[1], 'notice', 'skip')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 'canceled'
