-- Publish a backend's event atomically (publish_lib.lua's head comes first),
-- with an optional idempotency key and an optional note kept in the outbox.
-- KEYS[3]  idem:{room}:<key>  first result of this key (used when ARGV[11] is "1")
-- KEYS[4]  outbox:{room}      events whose follow-up work may be unfinished
-- ARGV[8]  data, a JSON object as sent
-- ARGV[9]  publisher id, decimal digits or ""
-- ARGV[10] body hash, to tell a retry from a different request under one key
-- ARGV[11] "1" when the publish has an idempotency key
-- ARGV[12] idempotency ttl in seconds
-- ARGV[13] a note, or "": kept in the outbox with the event (as
--          "<ms>\n<note>") until its owner clears it, so that work that must
--          follow the publish is finished even if the hub dies first (the
--          inbox's note: the recipient ids, comma separated)
-- ARGV[14] "1" when the publisher then WAITs for replicas: a duplicate then
--          rewrites the idempotency key's TTL, so that the WAIT (which covers
--          this connection's writes) also covers the first publish, older
--          in the replication stream
-- ARGV[15] extra, or "": kept with the event in history (see publish)
-- ARGV[16] traceparent, or "": sent with the live message (see publish)
-- Returns {"new", id, delivered, seq}, {"dup", id, delivered, seq, pending}
-- (pending: 1 while the outbox still holds it) or {"conflict"}.

local idem_key, outbox_key = KEYS[3], KEYS[4]
local data, publisher, hash = ARGV[8], ARGV[9], ARGV[10]
local idempotent, idem_ttl, note = ARGV[11] == '1', tonumber(ARGV[12]), ARGV[13]
local waits = ARGV[14] == '1'

if idempotent then
  local prev = redis.call('GET', idem_key)
  if prev then
    local h, id, delivered, seq = string.match(prev, '^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)$')
    if h ~= hash then
      return {'conflict'}
    end
    if waits then
      local ttl = redis.call('PTTL', idem_key)
      if ttl > 0 then redis.call('PEXPIRE', idem_key, ttl) end
    end
    return {'dup', id, tonumber(delivered), tonumber(seq), redis.call('HEXISTS', outbox_key, id)}
  end
end

local id, seq, delivered = publish(data, publisher, ARGV[15], nil, ARGV[16])

if note ~= '' then
  local ms = string.match(id, '^(%d+)')
  redis.call('HSET', outbox_key, id, ms .. '\n' .. note)
end
if idempotent then
  redis.call('SET', idem_key, hash .. '\n' .. id .. '\n' .. delivered .. '\n' .. seq, 'EX', idem_ttl)
end
return {'new', id, delivered, seq}
