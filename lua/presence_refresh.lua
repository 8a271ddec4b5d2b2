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
-- then per room: n, then the n user ids (at most 200 users a call, so
-- unpack's few thousand values are never near).
-- Returns the missing users as {room key index, user id, …} pairs: the index
-- in KEYS of the room's presence:{room}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl, connsTTL = ARGV[1], tonumber(ARGV[2])
local perUser = 0
if connsTTL > 0 then
  perUser = 1
end
local seenAt = tostring(now) -- once, not per user
local missing, m = {}, 0
local k, at = 1, 3
while k <= #KEYS do
  local hash = KEYS[k]
  local n = tonumber(ARGV[at])
  local seen = redis.call('HMGET', hash, unpack(ARGV, at + 1, at + n))
  local set, s = {}, 0
  for i = 1, n do
    local user = ARGV[at + i]
    if seen[i] then
      set[s + 1], set[s + 2], s = user, seenAt, s + 2
      if perUser == 1 then
        redis.call('EXPIRE', KEYS[k + 2 + i], connsTTL)
      end
    else
      missing[m + 1], missing[m + 2], m = tostring(k), user, m + 2
    end
  end
  if s > 0 then
    redis.call('HSET', hash, unpack(set))
    keep_room(hash, KEYS[k + 1], KEYS[k + 2], ttl)
  end
  k = k + 3 + perUser * n
  at = at + 1 + n
end
return missing
