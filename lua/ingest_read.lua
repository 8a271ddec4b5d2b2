-- Read ingest partitions within a byte budget. For each stream: what the
-- group delivered and nobody acknowledged (pending, id 0) first, then new
-- entries, up to a count. An entry larger than the most one may hold comes
-- back as its id and size alone, never its text. Once the entries returned
-- hold the budget, the read stops: entries it delivered and did not return
-- stay pending, and the next read returns them first (so a partition keeps
-- its order), and later partitions are not read this time. The first entry
-- is always returned, whatever its size (up to the most), so a read makes
-- progress. Entries are read one at a time, and every byte read counts
-- toward the budget, those of entries too big to return too: a script
-- copies at most one entry past the budget. An empty stream costs one XLEN.
-- KEYS     the partitions' streams (ingest:{p})
-- ARGV[1]  consumer group
-- ARGV[2]  consumer
-- ARGV[3]  entries per partition at most
-- ARGV[4]  the most bytes one entry may hold (its fields and values)
-- ARGV[5]  the bytes the entries returned may hold together
-- Returns one array per key, in order: five values per entry: its id, its
-- event field (false when it is too big; when it has none, its fields as a
-- JSON object, kept for the dead list), its traceparent field (or false),
-- its size in bytes, 1 when it is too big, 2 when it has no event field
-- (else 0); then 1 when the budget stopped the read (else 0).
local group, consumer, count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local most, budget = tonumber(ARGV[4]), tonumber(ARGV[5])
local used, full = 0, false
local out = {}

local function entries_of(reply)
  if not reply or not reply[1] then return {} end
  return reply[1][2] or {}
end

-- next_entry is key's next entry for this read: the consumer's pending
-- ones first (after pos.pending), then new ones; one at a time, so that no
-- more than one entry past the budget is ever copied into the script.
local function next_entry(key, pos)
  if pos.pending then
    local e = entries_of(redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', 1, 'STREAMS', key, pos.pending))[1]
    if e then
      pos.pending = e[1]
      return e
    end
    pos.pending = false
  end
  return entries_of(redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', 1, 'STREAMS', key, '>'))[1]
end

-- read counts every byte copied into the script, entries too big to
-- return included: past the budget the read stops, so a backlog of huge
-- entries costs a script one of them at most beyond it.
local read = 0
for i, key in ipairs(KEYS) do
  local got = {}
  -- An empty stream has nothing to read (what it holds is what is left to
  -- do: finished entries are trimmed), and one O(1) XLEN says so. Entries
  -- deleted while pending wait for the stream's next entry.
  if not full and redis.call('XLEN', key) > 0 then
    local pos = {pending = '0'}
    for _ = 1, count do
      local e = next_entry(key, pos)
      if not e then break end
      local fields = e[2] or {} -- false: deleted while pending
      local size, event, tp = 0, false, false
      for j = 1, #fields, 2 do
        size = size + #fields[j] + #fields[j + 1]
        if fields[j] == 'event' then event = fields[j + 1] elseif fields[j] == 'traceparent' then tp = fields[j + 1] end
      end
      local big = size > most
      if not big then
        if used > 0 and used + size > budget then
          full = true -- it stays pending: the next read returns it first
          break
        end
        used = used + size
      end
      read = read + size
      got[#got + 1] = e[1]
      local kind = big and 1 or 0
      if big then
        event, tp = false, false
      elseif not event then -- the fields it has instead, as they were sent
        local all = {}
        for j = 1, #fields, 2 do all[fields[j]] = fields[j + 1] end
        event, kind = cjson.encode(all), 2
      end
      got[#got + 1] = event
      got[#got + 1] = tp
      got[#got + 1] = size
      got[#got + 1] = kind
      if read >= budget then
        full = true
        break
      end
    end
  end
  out[i] = got
end
out[#KEYS + 1] = full and 1 or 0
return out
