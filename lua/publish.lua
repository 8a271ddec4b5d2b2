-- Publish one room event atomically: numbering, history and fan-out happen
-- together, so an event is never in history without being published, or the
-- reverse. Two modes share that tail:
--   event:    a backend's event, with an optional idempotency key;
--   presence: a coalesced presence.update built from the room's queued
--             transitions, at most one per broadcast interval.
-- KEYS[1]  room:events:{room}        stream, history
-- KEYS[2]  room:seq:{room}           per-room sequence number
-- event mode:
--   KEYS[3]  idem:{room}:<key>       first result of this key (used when ARGV[14] is "1")
--   KEYS[4]  outbox:{room}           notifications whose inbox writes may be unfinished
-- presence mode:
--   KEYS[3]  presence:changes:{room} queued transitions, "+uid" / "-uid"
--   KEYS[4]  presence:{room}         online users
--   KEYS[5]  presence:gate:{room}    exists while the broadcast interval runs
-- ARGV[1]  channel (room:{room})
-- ARGV[2]  event type (validated: [a-z0-9_.-], so safe inside JSON quotes)
-- ARGV[3]  data, a JSON object as sent (event mode; ignored in presence mode)
-- ARGV[4]  publisher id, decimal digits or ""
-- ARGV[5]  timestamp, RFC 3339
-- ARGV[6]  stream MAXLEN (approximate trimming)
-- ARGV[7]  idempotency ttl in seconds
-- ARGV[8]  body hash, to tell a retry from a different request under one key
-- ARGV[9]  room id, decimal digits
-- ARGV[10] "1" to SPUBLISH (cluster, sharded pub/sub), else PUBLISH
-- ARGV[11] "event" or "presence"
-- ARGV[12] presence: broadcast interval in ms (0 = one update per transition)
-- ARGV[13] presence: largest online list sent; above it onlineUsers is null
-- ARGV[14] event: "1" when the publish has an idempotency key
-- ARGV[15] event: recipient ids, comma separated, or "": recorded in the outbox
--          with the event, so that its inbox writes are finished even if the
--          hub dies before it does them
-- ARGV[16] history retention in seconds: history and seq expire this long
--          after the room's last publish (presence updates included)
-- Returns {"new", id, delivered, seq, more}, {"dup", id, delivered, seq,
-- pending} (pending: 1 while the outbox still holds it), {"conflict"},
-- {"wait", ms} (presence: the interval still runs) or {"empty"}.

local function numeric_less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end

local function json_ids(list)
  return '[' .. table.concat(list, ',') .. ']'
end

local function single(list)
  if #list == 1 then return list[1] end
  return 'null'
end

local function presence_data()
  local interval = tonumber(ARGV[12])
  if interval > 0 then
    local wait = redis.call('PTTL', KEYS[5])
    if wait > 0 then return nil, {'wait', wait} end
  end
  local changes
  if interval > 0 then
    changes = redis.call('LRANGE', KEYS[3], 0, -1)
    redis.call('DEL', KEYS[3])
  else
    local c = redis.call('LPOP', KEYS[3])
    changes = {}
    if c then changes[1] = c end
  end
  if #changes == 0 then return nil, {'empty'} end
  local joined, left = {}, {}
  for _, c in ipairs(changes) do
    if string.sub(c, 1, 1) == '+' then
      joined[#joined + 1] = string.sub(c, 2)
    else
      left[#left + 1] = string.sub(c, 2)
    end
  end
  local count = redis.call('HLEN', KEYS[4])
  local online = 'null'
  if count <= tonumber(ARGV[13]) then
    local users = redis.call('HKEYS', KEYS[4])
    table.sort(users, numeric_less)
    online = json_ids(users)
  end
  if interval > 0 then
    redis.call('SET', KEYS[5], '1', 'PX', interval)
  end
  return '{"onlineUsers":' .. online .. ',"joined":' .. single(joined) ..
    ',"left":' .. single(left) .. ',"count":' .. count ..
    ',"joinedUsers":' .. json_ids(joined) .. ',"leftUsers":' .. json_ids(left) .. '}'
end

local data = ARGV[3]
local idem = nil
if ARGV[11] == 'presence' then
  local built, answer = presence_data()
  if not built then return answer end
  data = built
elseif ARGV[14] == '1' then
  idem = KEYS[3]
  local prev = redis.call('GET', idem)
  if prev then
    local hash, id, delivered, seq = string.match(prev, '^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)$')
    if hash ~= ARGV[8] then
      return {'conflict'}
    end
    return {'dup', id, tonumber(delivered), tonumber(seq), redis.call('HEXISTS', KEYS[4], id)}
  end
end

local seq = redis.call('INCR', KEYS[2])
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[6], '*',
  'type', ARGV[2], 'data', data, 'publisher_id', ARGV[4],
  'timestamp', ARGV[5], 'seq', seq)

redis.call('EXPIRE', KEYS[1], ARGV[16])
redis.call('EXPIRE', KEYS[2], ARGV[16])

local publisher = 'null'
if ARGV[4] ~= '' then
  publisher = '"' .. ARGV[4] .. '"'
end
local msg = '{"id":"' .. id .. '","seq":' .. seq .. ',"roomId":' .. ARGV[9] ..
  ',"eventType":"' .. ARGV[2] .. '","publisherId":' .. publisher ..
  ',"timestamp":"' .. ARGV[5] .. '","data":' .. data .. '}'

local delivered
if ARGV[10] == '1' then
  delivered = redis.call('SPUBLISH', ARGV[1], msg)
else
  delivered = redis.call('PUBLISH', ARGV[1], msg)
end

if ARGV[11] == 'event' and ARGV[15] ~= '' then
  local ms = string.match(id, '^(%d+)')
  redis.call('HSET', KEYS[4], id, ms .. '\n' .. ARGV[15])
end
if idem then
  redis.call('SET', idem, ARGV[8] .. '\n' .. id .. '\n' .. delivered .. '\n' .. seq,
    'EX', tonumber(ARGV[7]))
end
local more = 0
if ARGV[11] == 'presence' then
  more = redis.call('LLEN', KEYS[3])
end
return {'new', id, delivered, seq, more}
