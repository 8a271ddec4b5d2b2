-- Publish one room event atomically: idempotency, sequence, history, fan-out.
-- An event is therefore never in history without being published, or the reverse.
-- KEYS[1]  room:events:{room}   stream, history
-- KEYS[2]  room:seq:{room}      per-room sequence number
-- KEYS[3]  idem:{room}:<key>    optional; first result of this idempotency key
-- ARGV[1]  channel (room:{room})
-- ARGV[2]  event type (validated: [a-z0-9_.-], so safe inside JSON quotes)
-- ARGV[3]  data, a JSON object as sent
-- ARGV[4]  publisher id, decimal digits or ""
-- ARGV[5]  timestamp, RFC 3339
-- ARGV[6]  stream MAXLEN (approximate trimming)
-- ARGV[7]  idempotency ttl in seconds
-- ARGV[8]  body hash, to tell a retry from a different request under the same key
-- ARGV[9]  room id, decimal digits
-- ARGV[10] "1" to SPUBLISH (cluster, sharded pub/sub), else PUBLISH
-- Returns {"new", id, delivered, seq}, {"dup", id, delivered, seq} or {"conflict"}.
local idem = KEYS[3]
if idem then
  local prev = redis.call('GET', idem)
  if prev then
    local hash, id, delivered, seq = string.match(prev, '^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)$')
    if hash ~= ARGV[8] then
      return {'conflict'}
    end
    return {'dup', id, tonumber(delivered), tonumber(seq)}
  end
end

local seq = redis.call('INCR', KEYS[2])
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[6], '*',
  'type', ARGV[2], 'data', ARGV[3], 'publisher_id', ARGV[4],
  'timestamp', ARGV[5], 'seq', seq)

local publisher = 'null'
if ARGV[4] ~= '' then
  publisher = '"' .. ARGV[4] .. '"'
end
local msg = '{"id":"' .. id .. '","seq":' .. seq .. ',"roomId":' .. ARGV[9] ..
  ',"eventType":"' .. ARGV[2] .. '","publisherId":' .. publisher ..
  ',"timestamp":"' .. ARGV[5] .. '","data":' .. ARGV[3] .. '}'

local delivered
if ARGV[10] == '1' then
  delivered = redis.call('SPUBLISH', ARGV[1], msg)
else
  delivered = redis.call('PUBLISH', ARGV[1], msg)
end

if idem then
  redis.call('SET', idem, ARGV[8] .. '\n' .. id .. '\n' .. delivered .. '\n' .. seq,
    'EX', tonumber(ARGV[7]))
end
return {'new', id, delivered, seq}
