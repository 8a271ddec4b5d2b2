-- A page of a topic's followers, ascending.
-- KEYS: as topic_lib.lua lists them.
-- ARGV[1] after: the page starts above this id
-- ARGV[2] limit
-- Returns {followers, id, …}: at most limit + 1 ids (one more than the
-- page says there are more).
local after, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {tonumber(redis.call('HGET', K_META, 'n') or '0')}
local c, hi = chunk_of(after + 1, false)
while c do
  for _, id in ipairs(read(c)) do
    if id > after then
      out[#out + 1] = id
      if #out > limit + 1 then return out end
    end
  end
  if not hi then break end
  c, hi = chunk_of(hi, false)
end
return out
