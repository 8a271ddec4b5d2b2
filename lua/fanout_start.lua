-- Records a topic publish's fan-out, once: a repeat (a retried publish, the
-- outbox sweep) answers the first record's recipients and changes nothing.
-- KEYS[1] fanout:{f:<id>}  hash: the fan-out's record
-- ARGV[1] topic key        ARGV[2] the snapshot's seq
-- ARGV[3] recipients       ARGV[4] reached already (the direct recipients)
-- ARGV[5] now (ms)         ARGV[6] the notice, as the inbox encodes it
-- ARGV[7] the skipped ids, comma separated
-- ARGV[8] "1": nobody is left to walk to: done at once
-- ARGV[9] how long a finished record is kept (ms)
-- Returns {recipients, new (1) or a repeat (0)}.
local have = redis.call('HGET', KEYS[1], 'recipients')
if have then return {tonumber(have), 0} end
redis.call('HSET', KEYS[1], 'topic', ARGV[1], 'snap', ARGV[2], 'recipients', ARGV[3],
  'reached', ARGV[4], 'startedAt', ARGV[5], 'pos', 0)
if ARGV[8] == '1' then
  redis.call('HSET', KEYS[1], 'state', 'done', 'finishedAt', ARGV[5])
  redis.call('PEXPIRE', KEYS[1], ARGV[9])
else
  redis.call('HSET', KEYS[1], 'state', 'running', 'notice', ARGV[6], 'skip', ARGV[7])
end
return {tonumber(ARGV[3]), 1}
