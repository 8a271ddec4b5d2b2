-- Read ingest partitions within a byte budget. For each stream: what the
-- group delivered and nobody acknowledged (pending, id 0) first, then new
-- entries, up to a count. An entry larger than the most one may hold comes
-- back as its id and size alone, never its text. Once the entries returned
-- hold the budget, the read stops: entries it delivered and did not return
-- stay pending, and the next read returns them first (so a partition keeps
-- its order), and later partitions are not read this time. The first entry
-- is always returned, whatever its size (up to the most), so a read makes
-- progress. An empty stream costs one XLEN.
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

for i, key in ipairs(KEYS) do
  local got = {}
  -- An empty stream has nothing to read (what it holds is what is left to
  -- do: finished entries are trimmed), and one O(1) XLEN says so. Entries
  -- deleted while pending wait for the stream's next entry.
  if not full and redis.call('XLEN', key) > 0 then
    local entries = entries_of(redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', key, '0'))
    if #entries < count then
      for _, e in ipairs(entries_of(redis.call('XREADGROUP', 'GROUP', group, consumer,
          'COUNT', count - #entries, 'STREAMS', key, '>'))) do
        entries[#entries + 1] = e
      end
    end
    for _, e in ipairs(entries) do
      local fields = e[2] or {} -- false: deleted while pending
      local size, event, tp = 0, false, false
      for j = 1, #fields, 2 do
        size = size + #fields[j] + #fields[j + 1]
        if fields[j] == 'event' then event = fields[j + 1] elseif fields[j] == 'traceparent' then tp = fields[j + 1] end
      end
      local big = size > most
      if not big then
        if used > 0 and used + size > budget then
          full = true
          break
        end
        used = used + size
      end
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
    end
  end
  out[i] = got
end
out[#KEYS + 1] = full and 1 or 0
return out
