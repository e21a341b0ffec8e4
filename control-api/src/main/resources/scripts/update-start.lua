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
-- A session that ended RESUMED_OLD is retried by the same lives: started afresh as the next
-- attempt (the hash's 'attempt', 1 when absent: a session stored before attempts were counted)
-- once every member of the attempt that failed has ended, so that none of them can still act in
-- it: a member has ended once it reported FAILED in that attempt (update-step.lua marks it
-- 'ended', also when the session had already ended), once it is no longer registered or no longer
-- live (live-after.lua's rule), once it registered again (another life), or when it is the
-- caller, a loader whose prepare starts a new update run (a loader runs one update at a time, so
-- its run of the failed attempt is over). Until then the start is refused ('pending', naming the
-- members that may still act). Every start that replaces an ended session (restarted, replaced,
-- retried) counts the next attempt, and update-step.lua refuses a report of another attempt.
-- KEYS: session hash, participants hash, channel, checksums hash, loader expiry zset, last
--       control-api tick, outage hash, loader hash per instance (in the order of the instances:
--       ARGV[i]'s is KEYS[i + 1])...
-- ARGV: phaseTimeoutMs, planId, ttlSeconds, loader ttlMs, outage gapMs, caller (the preparing
--       loader, or ''), instances (sorted, distinct)...
-- The session's times (started, phase deadline) come from the Redis server clock, which
-- update-step.lua judges them by.
-- A new (or restarted) session must hold each rollout instance that spans nodes whole: one
-- loader on each of its nodes, all agreeing on the node count. Otherwise half an instance could
-- advance while its other half stays on the old generation.
-- Returns {'created'} | {'restarted'} | {'retried'} | {'replaced', previous instances...}
--         | {'existing'} | {'conflict', existing instances...}
--         | {'pending', attempt, members of it that may still act...}
--         | {'incomplete', rollout instance, nodes, reason, its loaders here...}
--@include live-after
local s, pk = KEYS[1], KEYS[2]
-- ARGV[FIRST] is the first instance
local FIRST = 7
local caller = ARGV[6]
local attempt = 1
local created = 'created'
local replaced

local function incomplete()
  local spans, names = {}, {}
  for i = FIRST, #ARGV do
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

-- The participants of the session (the same as the instances asked for) that may still act in it:
-- registered with the epoch they joined with (or any, when they never reported), live, and
-- without an end reported. The caller, starting a new run, is not: its end is recorded.
local function still_acting()
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local after = live_after(now, KEYS[6], KEYS[7], ARGV[5], ARGV[4])
  local key = {}
  for i = FIRST, #ARGV do key[ARGV[i]] = KEYS[i + 1] end
  local all = redis.call('HGETALL', pk)
  local acting = {}
  for i = 1, #all, 2 do
    local name, p = all[i], cjson.decode(all[i + 1])
    if name == caller and not p.ended then
      p.ended = true
      redis.call('HSET', pk, name, cjson.encode(p))
    end
    local registered = key[name] and redis.call('HGET', key[name], 'epoch')
    local expiry = redis.call('ZSCORE', KEYS[5], name)
    local ended = p.ended or not registered
      or (p.epoch ~= nil and tostring(p.epoch) ~= registered)
      or not expiry or tonumber(expiry) < after
    if not ended then acting[#acting + 1] = name end
  end
  table.sort(acting)
  return acting
end

if redis.call('EXISTS', s) == 1 then
  local have = redis.call('HKEYS', pk)
  table.sort(have)
  local same = #have == #ARGV - FIRST + 1
  if same then
    for i = 1, #have do
      if have[i] ~= ARGV[FIRST - 1 + i] then same = false break end
    end
  end
  local state = redis.call('HGET', s, 'state')
  attempt = tonumber(redis.call('HGET', s, 'attempt') or '1')
  local failed = state == 'RESUMED_OLD' or state == 'PAUSED_REBUILD'
  if not same then
    local replaceable = failed
    if state == 'DONE' then
      replaceable = true
      for i = FIRST, #ARGV do
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
    for i = FIRST, #ARGV do
      local raw = redis.call('HGET', pk, ARGV[i])
      local joined = raw and cjson.decode(raw).epoch
      local now = KEYS[i + 1] and redis.call('HGET', KEYS[i + 1], 'epoch')
      if joined and now and tostring(joined) ~= now then rebuilt = true break end
    end
  end
  if rebuilt then
    created = 'restarted'
  elseif state == 'RESUMED_OLD' then
    -- The same lives: retried once none of them can still act in the failed attempt.
    local acting = still_acting()
    if #acting > 0 then
      local r = {'pending', tostring(attempt)}
      for _, v in ipairs(acting) do r[#r + 1] = v end
      return r
    end
    created = 'retried'
  else
    return {'existing'}
  end
end
local refused = incomplete()
if refused then return refused end
if created ~= 'created' then
  redis.call('DEL', s, pk, KEYS[4])
  attempt = attempt + 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local timeout = tonumber(ARGV[1])
redis.call('HSET', s, 'state', 'PREPARING', 'startedAt', now, 'phaseStartedAt', now,
  'phaseDeadline', now + timeout, 'timeoutMs', timeout, 'planId', ARGV[2], 'attempt', attempt)
for i = FIRST, #ARGV do
  redis.call('HSET', pk, ARGV[i], cjson.encode({phase = 'PREPARING'}))
end
redis.call('EXPIRE', s, ARGV[3])
redis.call('EXPIRE', pk, ARGV[3])
redis.call('PUBLISH', KEYS[3], 'PREPARING')
if replaced then return replaced end
return {created}
