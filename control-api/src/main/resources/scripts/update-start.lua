-- Starts the update session of a rollout group, or joins it when the participants are the same.
-- KEYS: session hash, participants hash, channel
-- ARGV: nowMs, phaseTimeoutMs, planId, ttlSeconds, instances (sorted, distinct)...
-- Returns {'created'} | {'existing'} | {'conflict', existing instances...}
local s, pk = KEYS[1], KEYS[2]
if redis.call('EXISTS', s) == 1 then
  local have = redis.call('HKEYS', pk)
  table.sort(have)
  local same = #have == #ARGV - 4
  if same then
    for i = 1, #have do
      if have[i] ~= ARGV[4 + i] then same = false break end
    end
  end
  if same then return {'existing'} end
  local r = {'conflict'}
  for _, v in ipairs(have) do r[#r + 1] = v end
  return r
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
return {'created'}
