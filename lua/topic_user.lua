-- What people follow: topics:{u}, a hash topicKey -> followedAt (ms), for
-- each user whose key KEYS lists (one user's on a cluster). The topic's own
-- list of followers is another slot's (topic_lib.lua).
-- ARGV[1] "follow", "unfollow", or "undo" (a follow of this request that
--         another user's refusal takes back)
-- ARGV[2] topicKey
-- ARGV[3] followedAt (ms): the follow's, or the one undo takes back
-- ARGV[4] the most topics a user follows (follow)
-- Returns per user: follow "added", "had" or "full" (nothing written);
-- unfollow and undo "1" when it removed, else "0".
local action, topic, at = ARGV[1], ARGV[2], ARGV[3]
local out = {}
for i, k in ipairs(KEYS) do
  if action == 'follow' then
    if redis.call('HEXISTS', k, topic) == 1 then
      out[i] = 'had'
    elseif redis.call('HLEN', k) >= tonumber(ARGV[4]) then
      out[i] = 'full'
    else
      redis.call('HSET', k, topic, at)
      out[i] = 'added'
    end
  elseif action == 'undo' then
    out[i] = '0'
    if redis.call('HGET', k, topic) == at then out[i] = tostring(redis.call('HDEL', k, topic)) end
  else
    out[i] = tostring(redis.call('HDEL', k, topic))
  end
end
return out
