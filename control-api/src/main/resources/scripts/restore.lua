-- Registers a generation restored from a checkpoint, in one atomic step: its record, its objects
-- (written to a private staging hash first, renamed into place here), its trainer step, and the
-- active pointer: active, or retired when a newer generation is already active. Raises the
-- generation-id counter past it, so the next publish continues after it.
-- ARGV: prefix, model, generation, trainerStep, manifestDigest, topologyDigest, objectsExpected,
--       bytesExpected, committedAt (ISO or ''), trainerTopologyJson (or ''), stagingKey
-- Returns {'active', previous or ''} | {'retired', active} | {'manifest-missing'}
--       | {'incomplete', staged} | {'conflict', state, digest} | {'busy', state}
--       | {'step-conflict', generation} | {'exists', state}
-- A generation that exists and is neither lost nor aborted still has its objects: it is never
-- restored over (a restore brings back only what is gone).
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local staging = ARGV[11]
local gk = p .. 'gen:' .. m .. ':' .. g
local objs = p .. 'gen-objects:' .. m .. ':' .. g
local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
if redis.call('EXISTS', p .. 'manifest-sizes:' .. m .. ':' .. ARGV[5]) == 0 then
  redis.call('DEL', staging)
  return {'manifest-missing'}
end
local staged = redis.call('HLEN', staging)
if staged ~= tonumber(ARGV[7]) then
  redis.call('DEL', staging)
  return {'incomplete', tostring(staged)}
end
local h = redis.call('HMGET', gk, 'state', 'manifestDigest', 'collecting')
if h[1] then
  if h[2] ~= ARGV[5] then
    redis.call('DEL', staging)
    return {'conflict', h[1], tostring(h[2])}
  end
  if h[1] == 'OPEN' or h[3] == '1' then
    redis.call('DEL', staging)
    return {'busy', h[1]}
  end
  if h[1] ~= 'LOST' and h[1] ~= 'ABORTED' then
    redis.call('DEL', staging)
    return {'exists', h[1]}
  end
end
local steps = p .. 'model:' .. m .. ':steps'
local byStep = redis.call('HGET', steps, ARGV[4])
if byStep and byStep ~= g then
  local s = redis.call('HGET', p .. 'gen:' .. m .. ':' .. byStep, 'state')
  if s and s ~= 'ABORTED' then
    redis.call('DEL', staging)
    return {'step-conflict', byStep}
  end
end
redis.call('RENAME', staging, objs)
redis.call('PERSIST', objs)
redis.call('HSET', gk, 'model', m, 'generation', g, 'trainerStep', ARGV[4],
  'manifestDigest', ARGV[5], 'trainerTopologyDigest', ARGV[6], 'objectsExpected', ARGV[7],
  'objectsRegistered', ARGV[7], 'bytesExpected', ARGV[8], 'restoredAt', now)
if not h[1] then
  redis.call('HSET', gk, 'openedAt', ARGV[9] ~= '' and ARGV[9] or now)
end
if ARGV[9] ~= '' then redis.call('HSET', gk, 'committedAt', ARGV[9]) end
if ARGV[10] ~= '' then redis.call('HSET', gk, 'trainerTopology', ARGV[10]) end
redis.call('HDEL', gk, 'lostAt', 'lostReason', 'corruptObject', 'abortReason', 'collecting')
redis.call('ZADD', p .. 'model:' .. m .. ':gens', g, g)
redis.call('HSET', steps, ARGV[4], g)
redis.call('SADD', p .. 'models', m)
local seq = p .. 'model:' .. m .. ':seq'
local current = tonumber(redis.call('GET', seq) or '0')
if current < tonumber(g) then redis.call('SET', seq, g) end
local ak = p .. 'model:' .. m .. ':active'
local prev = redis.call('GET', ak)
if prev and prev ~= g and tonumber(prev) > tonumber(g) then
  redis.call('HSET', gk, 'state', 'RETIRED', 'retiredAt', now)
  return {'retired', prev}
end
if prev and prev ~= g then
  redis.call('HSET', p .. 'gen:' .. m .. ':' .. prev, 'state', 'RETIRED', 'retiredAt', now)
end
redis.call('HSET', gk, 'state', 'ACTIVE')
redis.call('HDEL', gk, 'retiredAt')
redis.call('SET', ak, g)
redis.call('PUBLISH', p .. 'events:active:' .. m, g)
return {'active', prev or ''}
