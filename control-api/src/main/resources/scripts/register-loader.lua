-- Registers (or re-registers) a loader; every registration starts a new epoch, which fences
-- reports of the loader's previous incarnation. Epochs come from one counter for all loaders, so
-- an epoch names one registration of one loader: a report carrying another loader's epoch is
-- foreign, one carrying an earlier epoch of this loader (kept in previousEpochs) is stale. Every
-- fragment template a worker names must be stored; each one's TTL is renewed.
-- KEYS: hash, expiry zset, epoch counter, then one key per named template.
-- ARGV: instance, ttlMs (its expiry is that long after now on the Redis server clock, see
--       heartbeat.lua), model, group, node, endpoint, workersJson, nicsJson, templateTtlMs,
--       template digests (space-separated, in KEYS order), the rollout instance this loader serves
--       one node of and its node count (both empty: an instance on one node), the key prefix,
--       the data-plane engine the loader named (empty: it named none)
-- Returns {'ok', epoch, leases released} | {'missing', digest...}
local missing = {'missing'}
local digests = {}
for d in string.gmatch(ARGV[10], '%S+') do digests[#digests + 1] = d end
for i = 4, #KEYS do
  if redis.call('PEXPIRE', KEYS[i], ARGV[9]) == 0 then missing[#missing + 1] = digests[i - 3] end
end
if #missing > 1 then return missing end
local old = redis.call('HGET', KEYS[1], 'epoch')
local epoch = redis.call('INCR', KEYS[3])
if old and epoch <= tonumber(old) then
  epoch = tonumber(old) + 1
  redis.call('SET', KEYS[3], epoch)
end
if old then
  local previous = {}
  for e in string.gmatch(redis.call('HGET', KEYS[1], 'previousEpochs') or '', '%S+') do
    previous[#previous + 1] = e
  end
  previous[#previous + 1] = old
  while #previous > 16 do table.remove(previous, 1) end
  redis.call('HSET', KEYS[1], 'previousEpochs', table.concat(previous, ' '))
end
-- A registration starts the loader afresh: its buffers are new and serve no generation (the
-- 'generation' field goes below). The leases an earlier incarnation took under the loader's name
-- (on the generation it served, on one it was loading) go too, or a loader that died would keep
-- them from collection until they lapse (minutes: see heartbeat-loader.lua). A loader registered
-- again with its engine's memory kept (control-api had forgotten it) leases what it still serves
-- once more itself.
local released = 0
local function release(model)
  local p = ARGV[13]
  for _, id in ipairs(redis.call('ZRANGE', p .. 'model:' .. model .. ':gens', 0, -1)) do
    released = released + redis.call('ZREM', p .. 'gen-leases:' .. model .. ':' .. id, ARGV[1])
  end
end
local oldModel = redis.call('HGET', KEYS[1], 'model')
if oldModel and oldModel ~= ARGV[3] then release(oldModel) end
release(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stamp = t[1] .. string.format('%06d', tonumber(t[2]))
redis.call('HSET', KEYS[1], 'epoch', epoch)
redis.call('HSET', KEYS[1], 'instance', ARGV[1], 'model', ARGV[3], 'group', ARGV[4],
  'node', ARGV[5], 'endpoint', ARGV[6], 'workers', ARGV[7], 'nics', ARGV[8],
  'templates', ARGV[10], 'registeredAt', stamp, 'lastHeartbeat', stamp)
if ARGV[11] ~= '' then
  redis.call('HSET', KEYS[1], 'spanInstance', ARGV[11], 'spanNodes', ARGV[12])
else
  redis.call('HDEL', KEYS[1], 'spanInstance', 'spanNodes')
end
if ARGV[14] ~= '' then
  redis.call('HSET', KEYS[1], 'dataplaneEngine', ARGV[14])
else
  redis.call('HDEL', KEYS[1], 'dataplaneEngine')
end
redis.call('HDEL', KEYS[1], 'generation')
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
return {'ok', tostring(epoch), tostring(released)}
