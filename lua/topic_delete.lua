-- Deletes a topic: it reads as empty at once. Its followers' chunks move to
-- a trash key, from which the people's own lists are cleaned in the
-- background; the topic keeps its seq (a follow after it is still later
-- than every publish before) and remembers when it was deleted (dt: a
-- person's entry from before then is stale, whatever the cleaning has
-- reached).
-- KEYS: as topic_lib.lua lists them, then
-- KEYS[4] topic:trash:{t:<key>}:<ms>  where the chunks go
-- ARGV[1] now (ms)
-- Returns {the followers removed, 1 when chunks went to the trash}, or
-- {-1} when that trash key is taken (a delete in the same ms: try the next).
if redis.call('EXISTS', KEYS[4]) == 1 then return {-1} end
local n = tonumber(redis.call('HGET', K_META, 'n') or '0')
local moved = redis.call('EXISTS', K_CHUNKS)
if moved == 1 then redis.call('RENAME', K_CHUNKS, KEYS[4]) end
redis.call('UNLINK', K_INDEX)
redis.call('HSET', K_META, 'n', 0, 'c', 0, 'dt', ARGV[1])
return {n, moved}
