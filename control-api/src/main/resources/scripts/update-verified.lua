-- Ends the checksum verification update-step.lua claimed at the all-applied barrier: on success
-- the session moves to POST_APPLYING (the applied barrier opens), otherwise it pauses for rebuild
-- naming the object and its readers, or resumes the old generation when no participant's fetch
-- writes what its engine serves from (servesThroughFetch: none installed, the install comes after
-- the applied barrier). Only a session
-- still verifying changes.
-- KEYS: session hash, channel, participants hash
-- ARGV: ok ('1' or '0'), failedInstance, failure, verifyMs, verifiedObjects, partialObjects
-- (now from the Redis server clock, as update-step.lua's)
-- Returns {'ok', transitions...} | {'not-found'} | {'closed', state}
local s = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('EXISTS', s) == 0 then return {'not-found'} end
local state = redis.call('HGET', s, 'state')
if state ~= 'APPLYING' or not redis.call('HGET', s, 'verifyClaim') then return {'closed', state} end
redis.call('HDEL', s, 'verifyClaim')
redis.call('HSET', s, 'verifyMs', ARGV[4], 'verifiedObjects', ARGV[5], 'partialObjects', ARGV[6])
local r = {'ok'}
if ARGV[1] == '1' then
  local started = tonumber(redis.call('HGET', s, 'phaseStartedAt'))
  local timeout = tonumber(redis.call('HGET', s, 'timeoutMs'))
  redis.call('HSET', s, 'state', 'POST_APPLYING', 'applyMs', now - started, 'phaseStartedAt', now,
    'phaseDeadline', now + timeout)
  r[#r + 1] = 'apply:' .. tostring(now - started)
  state = 'POST_APPLYING'
else
  local next = 'RESUMED_OLD'
  local all = redis.call('HGETALL', KEYS[3])
  for i = 2, #all, 2 do
    if not cjson.decode(all[i]).servesThroughFetch then next = 'PAUSED_REBUILD' end
  end
  redis.call('HSET', s, 'state', next, 'failedInstance', ARGV[2], 'failure', ARGV[3],
    'endedAt', now)
  r[#r + 1] = 'failed:' .. next
  state = next
end
redis.call('PUBLISH', KEYS[2], state)
return r
