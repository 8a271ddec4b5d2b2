-- What people follow: topics:{u}, a hash topicKey -> followedAt (ms), for
-- each user whose key KEYS lists (one user's on a cluster). The topic's own
-- list of followers is another slot's (topic_lib.lua).
-- ARGV[1] "follow", "unfollow", "undo" (a follow of this request that
--         another user's refusal takes back), or "forget" (an entry from
--         before the topic was deleted)
-- ARGV[2] topicKey
-- ARGV[3] followedAt (ms): the follow's, the one undo takes back, or the
--         topic's deletion (forget: an entry at or before it goes)
-- ARGV[4] the most topics a user follows (follow)
-- ARGV[5] when the topic was last deleted (ms, follow): an entry from
--         before is stale, replaced by this follow
-- Returns per user: follow "added", "had" or "full" (nothing written);
-- unfollow, undo and forget "1" when it removed, else "0".
local action, topic, at = ARGV[1], ARGV[2], ARGV[3]
local out = {}
for i, k in ipairs(KEYS) do
  if action == 'follow' then
    local had = tonumber(redis.call('HGET', k, topic))
    if had and had > tonumber(ARGV[5]) then
      out[i] = 'had'
    elseif not had and redis.call('HLEN', k) >= tonumber(ARGV[4]) then
      out[i] = 'full'
    else
      redis.call('HSET', k, topic, at)
      out[i] = 'added'
    end
  elseif action == 'undo' then
    out[i] = '0'
    if redis.call('HGET', k, topic) == at then out[i] = tostring(redis.call('HDEL', k, topic)) end
  elseif action == 'forget' then
    out[i] = '0'
    local had = tonumber(redis.call('HGET', k, topic))
    if had and had <= tonumber(at) then out[i] = tostring(redis.call('HDEL', k, topic)) end
  else
    out[i] = tostring(redis.call('HDEL', k, topic))
  end
end
return out
