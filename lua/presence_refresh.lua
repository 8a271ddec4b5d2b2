-- Refresh the last heartbeat of the users an instance's open streams keep
-- present, many rooms a call: what the instance's lease stands for needs no
-- write per stream, but presence:{room} holds "the last heartbeat" and the
-- sweeper leaves alone users seen within half the TTL. A user no longer in
-- the hash (they left: a stream closed on any instance, or a sweep) is not
-- written back: they are returned, and the hub joins them again only for a
-- stream still open.
-- Per room, 3 keys: presence:{room}, room:events:{room}, room:seq:{room} (as
-- in presence_touch.lua), then, when ARGV[2] is not "0",
-- presence:conns:{room}:<u> of each of its n users (their TTL is renewed
-- only every few refreshes: it is long, and a write per user costs).
-- ARGV[1]  key ttl in seconds (PRESENCE_HASH_TTL_SECS)
-- ARGV[2]  the conns keys' ttl in seconds, or "0": not this time
-- then per room: n, then the n user ids.
-- Returns the missing users as {room key index, user id, …} pairs: the index
-- in KEYS of the room's presence:{room}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl, connsTTL = ARGV[1], tonumber(ARGV[2])
local perUser = 0
if connsTTL > 0 then
  perUser = 1
end
local missing = {}
local k, at = 1, 3
while k <= #KEYS do
  local hash = KEYS[k]
  local n = tonumber(ARGV[at])
  local users = {}
  for i = 1, n do
    users[i] = ARGV[at + i]
  end
  local seen = redis.call('HMGET', hash, unpack(users))
  local set = {}
  for i = 1, n do
    if seen[i] then
      set[#set + 1] = users[i]
      set[#set + 1] = now
      if perUser == 1 then
        redis.call('EXPIRE', KEYS[k + 2 + i], connsTTL)
      end
    else
      missing[#missing + 1] = tostring(k)
      missing[#missing + 1] = users[i]
    end
  end
  if #set > 0 then
    redis.call('HSET', hash, unpack(set))
    redis.call('EXPIRE', hash, ttl)
    local left = redis.call('TTL', KEYS[k + 1])
    if left >= 0 and left <= tonumber(ttl) then
      redis.call('EXPIRE', KEYS[k + 1], ttl)
      redis.call('EXPIRE', KEYS[k + 2], ttl)
    end
  end
  k = k + 3 + perUser * n
  at = at + 1 + n
end
return missing
