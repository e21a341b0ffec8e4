-- Registers (or re-registers) a loader; every registration starts a new epoch, which fences
-- reports of the loader's previous incarnation. Every fragment template a worker names must be
-- stored; each one's TTL is renewed.
-- KEYS: hash, expiry zset, then one key per named template.
-- ARGV: instance, expiryMs, nowIso, model, group, node, endpoint, workersJson, nicsJson,
--       templateTtlMs, template digests (space-separated, in KEYS order)
-- Returns {'ok', epoch} | {'missing', digest...}
local missing = {'missing'}
local digests = {}
for d in string.gmatch(ARGV[11], '%S+') do digests[#digests + 1] = d end
for i = 3, #KEYS do
  if redis.call('PEXPIRE', KEYS[i], ARGV[10]) == 0 then missing[#missing + 1] = digests[i - 2] end
end
if #missing > 1 then return missing end
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'instance', ARGV[1], 'model', ARGV[4], 'group', ARGV[5],
  'node', ARGV[6], 'endpoint', ARGV[7], 'workers', ARGV[8], 'nics', ARGV[9],
  'templates', ARGV[11], 'registeredAt', ARGV[3], 'lastHeartbeat', ARGV[3])
redis.call('HDEL', KEYS[1], 'generation')
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return {'ok', tostring(epoch)}
