-- Shared head of every inbox script (lua.go joins it in front of each). One
-- user's keys share the hash tag {user}, so a script may touch them together.
-- KEYS[1] inbox:{u}          hash  notificationId -> item JSON (no readAt)
-- KEYS[2] inbox:order:{u}    zset  notificationId, scored ms*1024, increasing
-- KEYS[3] inbox:read:{u}     hash  notificationId -> readAt
-- KEYS[4] unread_count:{u}   string, always the number of unread entries
-- KEYS[5] user:log:{u}       stream, the user stream's history
-- KEYS[6] user:seq:{u}       the log's sequence number
-- KEYS[7] read_status:{u}    hash  notificationId -> readAt (write-behind buffer)
-- KEYS[8] settings:muted:{u} set of muted event types
-- ARGV[1] retention in ms (entries older than this drop out)
-- ARGV[2] largest number of entries kept
-- ARGV[3] log MAXLEN (approximate): the user stream resumes this far back
-- ARGV[4] the user's channel, user:{u}
-- ARGV[5] "1" to SPUBLISH (cluster), else PUBLISH
-- ARGV[6..] the script's own

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function unread()
  return tonumber(redis.call('GET', KEYS[4]) or '0')
end

-- drop removes one entry; an unread one stops counting.
local function drop(id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[1], id)
  if redis.call('HDEL', KEYS[3], id) == 0 then
    if unread() > 0 then redis.call('DECR', KEYS[4]) end
  end
end

-- trim drops entries past the retention age and beyond the newest ARGV[2].
local function trim()
  local oldest = (now_ms() - tonumber(ARGV[1])) * 1024
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. oldest)) do
    drop(id)
  end
  local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[2])
  if extra > 0 then
    for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, extra - 1)) do
      drop(id)
    end
  end
end

-- log appends one event to the user's log and publishes it live, with the
-- log's id and seq, exactly as a room event travels.
local function log(typ, data)
  local seq = redis.call('INCR', KEYS[6])
  local id = redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[3], '*',
    'type', typ, 'data', data, 'publisher_id', '', 'timestamp', '', 'seq', seq)
  local ttl = math.floor(tonumber(ARGV[1]) / 1000)
  redis.call('EXPIRE', KEYS[5], ttl)
  redis.call('EXPIRE', KEYS[6], ttl)
  local msg = '{"id":"' .. id .. '","seq":' .. seq .. ',"eventType":"' .. typ .. '","data":' .. data .. '}'
  if ARGV[5] == '1' then
    redis.call('SPUBLISH', ARGV[4], msg)
  else
    redis.call('PUBLISH', ARGV[4], msg)
  end
  return id
end

local function json_str(s)
  return '"' .. s .. '"'
end

-- read_event builds notification.read's data for ids marked at read_at.
local function read_event(ids, read_at)
  local quoted = {}
  for i, id in ipairs(ids) do quoted[i] = json_str(id) end
  return '{"notificationIds":[' .. table.concat(quoted, ',') .. '],"readAt":' ..
    json_str(read_at) .. ',"unread":' .. unread() .. '}'
end

-- mark_read marks one unread entry read at read_at; false when it was read.
local function mark_read(id, read_at)
  if redis.call('HSETNX', KEYS[3], id, read_at) == 0 then return false end
  redis.call('HSET', KEYS[7], id, read_at)
  if unread() > 0 then redis.call('DECR', KEYS[4]) end
  return true
end

