-- Set consent on one of a user's devices or browsers: its entry's "off"
-- flag, kept by every later registration that does not say otherwise.
-- KEYS[1] push:devices:{u} or push:subs:{u}
-- ARGV[1] the entry's field (a device id, or a subscription's endpoint)
-- ARGV[2] '1' enabled, '0' not
-- Returns the entry as it is now, or false when there is none.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return false end
local e = cjson.decode(raw)
if ARGV[2] == '1' then e.off = nil else e.off = true end
raw = cjson.encode(e)
redis.call('HSET', KEYS[1], ARGV[1], raw)
return raw
