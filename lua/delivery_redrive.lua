-- Put dead deliveries back as due now, attempts from zero.
-- KEYS[1] delivery:{u}  KEYS[2] delivery:due:{u}  KEYS[3] delivery:done:{u}
-- ARGV[1] how long the delivery keys live after a write, in ms
-- ARGV[2..] record ids
-- Returns {records requeued, the next due time (ms) or ""}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = 0
for i = 2, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[i])
  if raw then
    local rec = cjson.decode(raw)
    if rec.s == 'dead' then
      rec.s, rec.r, rec.n, rec.due, rec.t = 'scheduled', nil, 0, now, now
      redis.call('HSET', KEYS[1], ARGV[i], cjson.encode(rec))
      redis.call('ZADD', KEYS[2], now, ARGV[i])
      redis.call('ZREM', KEYS[3], ARGV[i])
      n = n + 1
    end
  end
end
if n > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
local nxt = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return {n, nxt[2] or ''}
