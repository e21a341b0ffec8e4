-- Starts the update session of a rollout group, or joins it when the participants are the same.
-- A session that ended (DONE, RESUMED_OLD, PAUSED_REBUILD) is started afresh once the group was
-- rebuilt, that is once a participant is registered with another epoch than the one it joined with:
-- its instances are new lives that must be able to load the same generation again (a loader killed
-- mid-apply fails the session of the active generation, and the rebuilt group loads that one). A
-- rebuilt group must never join an ended session: its barriers are open, so one loader would push
-- before a peer took its notify baseline, and that peer would wait for a batch that already came.
-- KEYS: session hash, participants hash, channel, checksums hash, loader hash per instance (in the
--       order of the instances)...
-- ARGV: nowMs, phaseTimeoutMs, planId, ttlSeconds, instances (sorted, distinct)...
-- Returns {'created'} | {'restarted'} | {'existing'} | {'conflict', existing instances...}
local s, pk = KEYS[1], KEYS[2]
local created = 'created'
if redis.call('EXISTS', s) == 1 then
  local have = redis.call('HKEYS', pk)
  table.sort(have)
  local same = #have == #ARGV - 4
  if same then
    for i = 1, #have do
      if have[i] ~= ARGV[4 + i] then same = false break end
    end
  end
  if not same then
    local r = {'conflict'}
    for _, v in ipairs(have) do r[#r + 1] = v end
    return r
  end
  local state = redis.call('HGET', s, 'state')
  local rebuilt = false
  if state == 'DONE' or state == 'RESUMED_OLD' or state == 'PAUSED_REBUILD' then
    for i = 5, #ARGV do
      local raw = redis.call('HGET', pk, ARGV[i])
      local joined = raw and cjson.decode(raw).epoch
      local now = KEYS[i] and redis.call('HGET', KEYS[i], 'epoch')
      if joined and now and tostring(joined) ~= now then rebuilt = true break end
    end
  end
  if not rebuilt then return {'existing'} end
  redis.call('DEL', s, pk, KEYS[4])
  created = 'restarted'
end
local now, timeout = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('HSET', s, 'state', 'PREPARING', 'startedAt', now, 'phaseStartedAt', now,
  'phaseDeadline', now + timeout, 'timeoutMs', timeout, 'planId', ARGV[3])
for i = 5, #ARGV do
  redis.call('HSET', pk, ARGV[i], cjson.encode({phase = 'PREPARING'}))
end
redis.call('EXPIRE', s, ARGV[4])
redis.call('EXPIRE', pk, ARGV[4])
redis.call('PUBLISH', KEYS[3], 'PREPARING')
return {created}
