-- Renew the lease of a hand-off in flight, record by record, while the
-- records are still the caller's.
-- KEYS[1] delivery:{u}  KEYS[2] delivery:due:{u}
-- ARGV[1] lease token
-- ARGV[2] the lease's new end (ms)
-- ARGV[3..] record ids
-- Returns how many it renewed.
local n = 0
for i = 3, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[i])
  if raw then
    local rec = cjson.decode(raw)
    if rec.s == 'sending' and rec.ls == ARGV[1] then
      redis.call('ZADD', KEYS[2], 'XX', ARGV[2], ARGV[i])
      n = n + 1
    end
  end
end
return n
