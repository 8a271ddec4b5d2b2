-- The head of the scripts that tell a dead hub instance's streams apart
-- (presence_leave.lua, user_conns.lua, delivery_claim.lua): a stream's
-- member is "<instance>.<connection>" (hub/instances.go).

-- id_set is the set of the ids in s, comma separated ("" for none), and
-- whether it has any.
local function id_set(s)
  local set, any = {}, false
  for id in string.gmatch(s, '[^,]+') do
    set[id], any = true, true
  end
  return set, any
end

-- instance_of is the instance of a stream's member, nil for another member
-- ("hb", an older hub's connection id).
local function instance_of(member)
  return string.match(member, '^([^.]+)%.')
end

-- of_dead is the members (a list) whose instance is in dead (an id_set).
local function of_dead(members, dead)
  local out = {}
  for _, m in ipairs(members) do
    local inst = instance_of(m)
    if inst and dead[inst] then
      out[#out + 1] = m
    end
  end
  return out
end

