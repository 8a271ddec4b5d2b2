-- Add one notification to a user's inbox, exactly once: a muted type is
-- skipped, an id already there is a duplicate (a retry), a new one raises the
-- unread count and goes to the user's log and channel as notification.created.
-- KEYS and ARGV[1..5]: see inbox_lib.lua.
-- ARGV[6] notificationId
-- ARGV[7] event type
-- ARGV[8] the item JSON: {"notificationId",…,"timestamp"} (no readAt)
-- ARGV[9] the event's time in ms (its stream id's ms)
-- Returns {"muted"}, {"dup"}, {"old"} (older than retention) or {"new", unread}.
if redis.call('SISMEMBER', KEYS[8], ARGV[7]) == 1 then return {'muted'} end
local id = ARGV[6]
if redis.call('HEXISTS', KEYS[1], id) == 1 then return {'dup'} end
local score = tonumber(ARGV[9]) * 1024
local last = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if last[2] and tonumber(last[2]) >= score then score = tonumber(last[2]) + 1 end
redis.call('HSET', KEYS[1], id, ARGV[8])
redis.call('ZADD', KEYS[2], score, id)
redis.call('INCR', KEYS[4])
trim()
if redis.call('HEXISTS', KEYS[1], id) == 0 then return {'old'} end
local ttl = math.floor(tonumber(ARGV[1]) / 1000)
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ttl) end
local item = ARGV[8]
log('notification.created', string.sub(item, 1, -2) .. ',"readAt":null,"unread":' .. unread() .. '}')
return {'new', unread()}
