-- Ends the checksum verification update-step.lua claimed at the all-applied barrier: on success
-- the session moves to POST_APPLYING (the applied barrier opens), otherwise it pauses for rebuild
-- naming the object and its readers. Only a session still verifying changes.
-- KEYS: session hash, channel
-- ARGV: nowMs, ok ('1' or '0'), failedInstance, failure, verifyMs, verifiedObjects, partialObjects
-- Returns {'ok', transitions...} | {'not-found'} | {'closed', state}
local s = KEYS[1]
local now = tonumber(ARGV[1])
if redis.call('EXISTS', s) == 0 then return {'not-found'} end
local state = redis.call('HGET', s, 'state')
if state ~= 'APPLYING' or not redis.call('HGET', s, 'verifyClaim') then return {'closed', state} end
redis.call('HDEL', s, 'verifyClaim')
redis.call('HSET', s, 'verifyMs', ARGV[5], 'verifiedObjects', ARGV[6], 'partialObjects', ARGV[7])
local r = {'ok'}
if ARGV[2] == '1' then
  local started = tonumber(redis.call('HGET', s, 'phaseStartedAt'))
  local timeout = tonumber(redis.call('HGET', s, 'timeoutMs'))
  redis.call('HSET', s, 'state', 'POST_APPLYING', 'applyMs', now - started, 'phaseStartedAt', now,
    'phaseDeadline', now + timeout)
  r[#r + 1] = 'apply:' .. tostring(now - started)
  state = 'POST_APPLYING'
else
  redis.call('HSET', s, 'state', 'PAUSED_REBUILD', 'failedInstance', ARGV[3], 'failure', ARGV[4],
    'endedAt', now)
  r[#r + 1] = 'failed:PAUSED_REBUILD'
  state = 'PAUSED_REBUILD'
end
redis.call('PUBLISH', KEYS[2], state)
return r
