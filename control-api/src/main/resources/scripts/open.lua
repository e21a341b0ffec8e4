-- Opens a generation, idempotent by trainer step. A step whose generation was aborted opens a
-- fresh generation: the trainer retries the step.
-- ARGV: prefix, model, trainerStep, manifestDigest, topologyDigest, objectsExpected,
--       bytesExpected, trainerTopologyJson, afterGeneration (the id floor: the trainer's
--       newest generation, so ids continue above it after Redis lost its data; '0' for none)
-- openedAt comes from the Redis server clock, as commit.lua's committedAt does.
-- Returns {'created'|'existing', id} | {'step-conflict', id} | {'manifest-missing'}
local p, m = ARGV[1], ARGV[2]
local steps = p .. 'model:' .. m .. ':steps'
local existing = redis.call('HGET', steps, ARGV[3])
if existing then
  local g = p .. 'gen:' .. m .. ':' .. existing
  local d = redis.call('HMGET', g, 'manifestDigest', 'trainerTopologyDigest', 'state')
  if d[1] and d[3] ~= 'ABORTED' then
    if d[1] == ARGV[4] and d[2] == ARGV[5] then
      return {'existing', existing}
    end
    return {'step-conflict', existing}
  end
end
if redis.call('EXISTS', p .. 'manifest-sizes:' .. m .. ':' .. ARGV[4]) == 0 then
  return {'manifest-missing'}
end
local seq = p .. 'model:' .. m .. ':seq'
local floor = tonumber(ARGV[9] or '0') or 0
if floor > (tonumber(redis.call('GET', seq) or '0') or 0) then
  redis.call('SET', seq, string.format('%d', floor))
end
local id = tostring(redis.call('INCR', seq))
local t = redis.call('TIME')
local stamp = t[1] .. string.format('%06d', tonumber(t[2]))
redis.call('HSET', p .. 'gen:' .. m .. ':' .. id,
  'model', m, 'generation', id, 'state', 'OPEN', 'trainerStep', ARGV[3],
  'manifestDigest', ARGV[4], 'trainerTopologyDigest', ARGV[5],
  'objectsExpected', ARGV[6], 'objectsRegistered', '0', 'bytesExpected', ARGV[7],
  'openedAt', stamp, 'trainerTopology', ARGV[8])
redis.call('ZADD', p .. 'model:' .. m .. ':gens', id, id)
redis.call('HSET', steps, ARGV[3], id)
redis.call('SADD', p .. 'models', m)
return {'created', id}
