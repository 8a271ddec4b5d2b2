-- Record how a hand-off ended (delivery_claim.lua leased it): sent, retry
-- at a time with the error code (and the attempt it came from: "ea"), dead
-- with it, or requeue (not tried: an
-- earlier hand-off of the channel failed, so this one waits behind it). A
-- record whose lease is no longer the caller's (it ran out and another
-- instance took over) is left alone.
-- KEYS[1] delivery:{u}  KEYS[2] delivery:due:{u}  KEYS[3] delivery:done:{u}
-- ARGV[1] lease token
-- ARGV[2] outcome: sent, retry, dead, skipped (not handed off: webpush with
--         no subscription) or requeue
-- ARGV[3] retry, requeue: when it is due again (ms)
-- ARGV[4] retry, dead: the error code; skipped: the reason
-- ARGV[5] the sent prefix, delivery:sent:{u}:
-- ARGV[6] the dedupe prefix, delivery:dedupe:{u}:
-- ARGV[7] how long the delivery keys live after a write, in ms
-- ARGV[8..] the hand-off's record ids, the first one first
-- Returns {next due (ms) or "", records changed}.
local K_DREC, K_DDUE, K_DONE = KEYS[1], KEYS[2], KEYS[3]
local token, outcome, again, code = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local sent_prefix, dedupe_prefix, keys_ttl = ARGV[5], ARGV[6], ARGV[7]
local t = redis.call('TIME')
local NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local head = ARGV[8]
local ch = string.match(head, '|([^|]*)$')
local changed = 0
for i = 8, #ARGV do
  local rid = ARGV[i]
  local raw = redis.call('HGET', K_DREC, rid)
  local rec = raw and cjson.decode(raw)
  if rec and rec.s == 'sending' and rec.ls == token then
    changed = changed + 1
    rec.ls, rec.t = nil, NOW
    if outcome ~= 'sent' and rec.dk then
      -- the dedupe window opens with a hand-off that went out, not before
      local dk = dedupe_prefix .. ch .. ':' .. rec.dk
      if redis.call('GET', dk) == rid then redis.call('DEL', dk) end
    end
    if outcome == 'sent' or outcome == 'dead' or outcome == 'skipped' then
      rec.s, rec.due = outcome, nil
      if outcome == 'dead' then rec.e, rec.ea = code, rec.n end
      if outcome == 'skipped' then rec.r = code end
      redis.call('ZREM', K_DDUE, rid)
      redis.call('ZADD', K_DONE, NOW, rid)
    elseif outcome == 'retry' then
      rec.s, rec.e, rec.ea, rec.due = 'retrying', code, rec.n, again
      redis.call('ZADD', K_DDUE, again, rid)
    else -- requeue
      rec.s, rec.n, rec.due = rec.ps or 'scheduled', rec.n - 1, again
      redis.call('ZADD', K_DDUE, again, rid)
    end
    rec.ps = nil
    redis.call('HSET', K_DREC, rid, cjson.encode(rec))
  end
end
if changed > 0 then
  if outcome ~= 'sent' then
    redis.call('ZREM', sent_prefix .. ch, head) -- counted only when sent
  end
  if outcome == 'retry' then
    redis.call('HSET', K_DREC, 'hol|' .. ch, string.format('%d', again) .. '\t' .. head)
  end
  redis.call('PEXPIRE', K_DREC, keys_ttl)
  redis.call('PEXPIRE', K_DDUE, keys_ttl)
  redis.call('PEXPIRE', K_DONE, keys_ttl)
end
local nxt = redis.call('ZRANGE', K_DDUE, 0, 0, 'WITHSCORES')
return {nxt[2] or '', changed}
