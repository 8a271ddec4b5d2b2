-- Shared head of publish_event.lua and publish_presence.lua: the common tail
-- of a publish. Numbering, history and fan-out happen together, so an event
-- is never in history without being published, or the reverse.
-- Both scripts take these first:
-- KEYS[1]  room:events:{room}        stream, history
-- KEYS[2]  room:seq:{room}           per-room sequence number
-- ARGV[1]  channel (room:{room})
-- ARGV[2]  room id, decimal digits
-- ARGV[3]  "1" to SPUBLISH (cluster, sharded pub/sub), else PUBLISH
-- ARGV[4]  event type (validated: [a-z0-9_.-], so safe inside JSON quotes)
-- ARGV[5]  timestamp, RFC 3339
-- ARGV[6]  stream MAXLEN (approximate trimming)
-- ARGV[7]  history retention in seconds: history and seq expire this long
--          after the room's last publish (see keep_history for presence)

local events_key, seq_key = KEYS[1], KEYS[2]
local channel, room_id, sharded = ARGV[1], ARGV[2], ARGV[3] == '1'
local event_type, timestamp, maxlen, retention = ARGV[4], ARGV[5], ARGV[6], ARGV[7]

-- keep_history sets how long the room's history and seq live: a backend's
-- event, the retention; a presence update (short, the presence keys' TTL),
-- only while nothing longer is set: presence alone keeps a room's history as
-- long as its presence, not for the retention.
local function keep_history(ttl)
  ttl = tonumber(ttl)
  if ttl < tonumber(retention) then
    local left = redis.call('TTL', events_key)
    if left >= 0 and left > ttl then return end
  end
  redis.call('EXPIRE', events_key, ttl)
  redis.call('EXPIRE', seq_key, ttl)
end

-- publish numbers, stores and publishes one event with this data (a JSON
-- object) and publisher ('' for none); extra, when not '', is kept with it
-- in history (field x) for the package that published it, and not sent
-- live; traceparent, when not nil or '', goes with the live message only
-- (the publish's trace, which the delivering hubs join). It returns the id,
-- the seq and how many hubs the message reached.
local function publish(data, publisher, extra, history_ttl, traceparent)
  local seq = redis.call('INCR', seq_key)
  local id
  if extra and extra ~= '' then
    id = redis.call('XADD', events_key, 'MAXLEN', '~', maxlen, '*',
      'type', event_type, 'data', data, 'publisher_id', publisher,
      'timestamp', timestamp, 'seq', seq, 'x', extra)
  else
    id = redis.call('XADD', events_key, 'MAXLEN', '~', maxlen, '*',
      'type', event_type, 'data', data, 'publisher_id', publisher,
      'timestamp', timestamp, 'seq', seq)
  end
  keep_history(history_ttl or retention)
  local pub = 'null'
  if publisher ~= '' then
    pub = '"' .. publisher .. '"'
  end
  local msg = '{"id":"' .. id .. '","seq":' .. seq .. ',"roomId":' .. room_id ..
    ',"eventType":"' .. event_type .. '","publisherId":' .. pub ..
    ',"timestamp":"' .. timestamp .. '",'
  if traceparent and traceparent ~= '' then
    msg = msg .. '"traceparent":"' .. traceparent .. '",'
  end
  msg = msg .. '"data":' .. data .. '}'
  local delivered
  if sharded then
    delivered = redis.call('SPUBLISH', channel, msg)
  else
    delivered = redis.call('PUBLISH', channel, msg)
  end
  return id, seq, delivered
end
