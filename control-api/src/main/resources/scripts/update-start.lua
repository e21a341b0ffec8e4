-- Starts the update session of a rollout group, or joins it when the participants are the same.
-- A session that ended (DONE, RESUMED_OLD, PAUSED_REBUILD) is started afresh once the group was
-- rebuilt, that is once a participant is registered with another epoch than the one it joined with:
-- its instances are new lives that must be able to load the same generation again (a loader killed
-- mid-apply fails the session of the active generation, and the rebuilt group loads that one). A
-- rebuilt group must never join an ended session: its barriers are open, so one loader would push
-- before a peer took its notify baseline, and that peer would wait for a batch that already came.
-- A session that failed or was aborted (RESUMED_OLD, PAUSED_REBUILD) is replaced by one with other
-- participants: a loader that died for good mid-apply leaves the survivors a different
-- membership, and they must be able to load the same generation again, not wait for the next
-- publish. A DONE session is replaced by one with other participants once each of its participants
-- that is in the new one was rebuilt (registered with another epoch than the one it joined with):
-- the instance that died comes back, and the whole group must be able to load the generation its
-- survivors finished. A session still running, or DONE while a participant of it in the new one is
-- still the life that finished it (it serves the generation), keeps its membership: another one is a
-- conflict.
-- KEYS: session hash, participants hash, channel, checksums hash, loader hash per instance (in the
--       order of the instances: ARGV[i]'s is KEYS[i + 1])...
-- ARGV: phaseTimeoutMs, planId, ttlSeconds, instances (sorted, distinct)...
-- The session's times (started, phase deadline) come from the Redis server clock, which
-- update-step.lua judges them by.
-- A new (or restarted) session must hold each rollout instance that spans nodes whole: one
-- loader on each of its nodes, all agreeing on the node count. Otherwise half an instance could
-- advance while its other half stays on the old generation.
-- Returns {'created'} | {'restarted'} | {'replaced', previous instances...} | {'existing'}
--         | {'conflict', existing instances...}
--         | {'incomplete', rollout instance, nodes, reason, its loaders here...}
local s, pk = KEYS[1], KEYS[2]
local created = 'created'
local replaced

local function incomplete()
  local spans, names = {}, {}
  for i = 4, #ARGV do
    local h = redis.call('HMGET', KEYS[i + 1], 'spanInstance', 'spanNodes', 'node')
    if h[1] and h[1] ~= '' then
      local span = spans[h[1]]
      if not span then
        span = {nodes = h[2], loaders = {}, on = {}}
        spans[h[1]] = span
        names[#names + 1] = h[1]
      end
      if span.nodes ~= h[2] then span.reason = 'nodes-differ' end
      if span.on[h[3]] then span.reason = 'same-node' end
      span.on[h[3]] = true
      span.loaders[#span.loaders + 1] = ARGV[i]
    end
  end
  table.sort(names)
  for _, name in ipairs(names) do
    local span = spans[name]
    local reason = span.reason
    if not reason and #span.loaders < tonumber(span.nodes) then reason = 'missing' end
    if not reason and #span.loaders > tonumber(span.nodes) then reason = 'extra' end
    if reason then
      local r = {'incomplete', name, span.nodes, reason}
      for _, l in ipairs(span.loaders) do r[#r + 1] = l end
      return r
    end
  end
  return nil
end

if redis.call('EXISTS', s) == 1 then
  local have = redis.call('HKEYS', pk)
  table.sort(have)
  local same = #have == #ARGV - 3
  if same then
    for i = 1, #have do
      if have[i] ~= ARGV[3 + i] then same = false break end
    end
  end
  local state = redis.call('HGET', s, 'state')
  local failed = state == 'RESUMED_OLD' or state == 'PAUSED_REBUILD'
  if not same then
    local replaceable = failed
    if state == 'DONE' then
      replaceable = true
      for i = 4, #ARGV do
        local raw = redis.call('HGET', pk, ARGV[i])
        if raw then
          local joined = cjson.decode(raw).epoch
          local current = KEYS[i + 1] and redis.call('HGET', KEYS[i + 1], 'epoch')
          if not (joined and current and tostring(joined) ~= current) then
            replaceable = false
            break
          end
        end
      end
    end
    local r = {replaceable and 'replaced' or 'conflict'}
    for _, v in ipairs(have) do r[#r + 1] = v end
    if not replaceable then return r end
    replaced = r
  end
  local rebuilt = replaced ~= nil
  if not rebuilt and (failed or state == 'DONE') then
    for i = 4, #ARGV do
      local raw = redis.call('HGET', pk, ARGV[i])
      local joined = raw and cjson.decode(raw).epoch
      local now = KEYS[i + 1] and redis.call('HGET', KEYS[i + 1], 'epoch')
      if joined and now and tostring(joined) ~= now then rebuilt = true break end
    end
  end
  if not rebuilt then return {'existing'} end
  created = 'restarted'
end
local refused = incomplete()
if refused then return refused end
if created == 'restarted' then redis.call('DEL', s, pk, KEYS[4]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local timeout = tonumber(ARGV[1])
redis.call('HSET', s, 'state', 'PREPARING', 'startedAt', now, 'phaseStartedAt', now,
  'phaseDeadline', now + timeout, 'timeoutMs', timeout, 'planId', ARGV[2])
for i = 4, #ARGV do
  redis.call('HSET', pk, ARGV[i], cjson.encode({phase = 'PREPARING'}))
end
redis.call('EXPIRE', s, ARGV[3])
redis.call('EXPIRE', pk, ARGV[3])
redis.call('PUBLISH', KEYS[3], 'PREPARING')
if replaced then return replaced end
return {created}
