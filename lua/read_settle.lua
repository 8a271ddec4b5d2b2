-- Settle flushed reads of one user: each entry still holding the readAt the
-- flusher sent is removed from the write-behind buffer (a read that changed
-- meanwhile stays for the next flush). "dead" also keeps it, with the sink's
-- reason, in the dead-letter hash.
-- KEYS[1]  read_status:{u}   hash notificationId -> readAt
-- KEYS[2]  read_dead:{u}     hash notificationId -> {"readAt","reason"}
-- ARGV[1]  "ack" or "dead"
-- ARGV[2]  dead: the reason, JSON-quoted; dead letters expire after ARGV[3] s
-- ARGV[3]  dead: ttl in seconds
-- ARGV[4..] notificationId, readAt pairs
-- Returns {settled, left in the buffer}.
local settled = 0
for i = 4, #ARGV, 2 do
  local id, read_at = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', KEYS[1], id) == read_at then
    redis.call('HDEL', KEYS[1], id)
    settled = settled + 1
    if ARGV[1] == 'dead' then
      redis.call('HSET', KEYS[2], id, '{"readAt":"' .. read_at .. '","reason":' .. ARGV[2] .. '}')
    end
  end
end
if ARGV[1] == 'dead' and settled > 0 then
  redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
end
return {settled, redis.call('HLEN', KEYS[1])}
