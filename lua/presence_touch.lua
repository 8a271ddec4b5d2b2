-- Mark users present in rooms, each through one or more members: open
-- streams (their connection ids) or an explicit heartbeat ("hb"). The
-- heartbeat lives until its expiry unless touched again; a stream's member
-- has no expiry (+inf): it lives while its instance's lease does, and goes
-- when the stream closes or a sweep finds its instance dead (see
-- hub/instances.go). The first member of an absent user is a join. One call carries many touches (the clock's
-- refreshes of an instance's streams, a page stream's rooms), each room's
-- own keys refreshed once however many of its users the call touches.
-- Per touch, five keys:
--   presence:{room}            hash userId -> last seen (ms)
--   presence:changes:{room}    queued transitions for presence.update
--   presence:conns:{room}:<u>  zset member -> expiry (ms; +inf for streams)
--   room:events:{room}, room:seq:{room}: a room whose history only presence
--   keeps (its TTL at most ARGV[2]) lives while someone is present
-- ARGV[1]  a heartbeat's lifetime in ms (PRESENCE_USER_TTL_SECS)
-- ARGV[2]  key ttl in seconds (PRESENCE_HASH_TTL_SECS)
-- ARGV[3]  a stream's presence:conns key ttl in seconds: longer, renewed
--          only every few refreshes (presence_refresh.lua)
-- then per touch, in the order of KEYS: the user id, the number of members,
-- the members.
-- Returns, per touch, 1 when the user joined, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = now + tonumber(ARGV[1])
local ttl = ARGV[2]
local rooms = {} -- a room's hash key, once its own keys are refreshed
local joined = {}
local at = 4
for k = 1, #KEYS, 5 do
  local hash, changes, conns = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  local user, n = ARGV[at], tonumber(ARGV[at + 1])
  local scored = {} -- expiry, member, expiry, member, …
  local keep = tonumber(ttl) -- a heartbeat's key lives the key ttl, a stream's longer
  for i = at + 2, at + 1 + n do
    if ARGV[i] == 'hb' then
      scored[#scored + 1] = expiry
    else
      scored[#scored + 1] = '+inf'
      keep = tonumber(ARGV[3])
    end
    scored[#scored + 1] = ARGV[i]
  end
  at = at + 2 + n
  redis.call('ZADD', conns, unpack(scored))
  local lives = redis.call('TTL', conns)
  if lives < keep then -- never shortened (-1: a new key)
    redis.call('EXPIRE', conns, keep)
  end
  if redis.call('HSET', hash, user, now) == 1 then -- a new field: a join
    joined[#joined + 1] = 1
    redis.call('RPUSH', changes, '+' .. user)
    redis.call('EXPIRE', changes, ttl)
  else
    joined[#joined + 1] = 0
  end
  if not rooms[hash] then
    rooms[hash] = true
    keep_room(hash, KEYS[k + 3], KEYS[k + 4], ttl)
  end
end
return joined
