-- Registers (or re-registers) a loader; every registration starts a new epoch, which fences
-- reports of the loader's previous incarnation.
-- KEYS: hash, expiry zset. ARGV: instance, expiryMs, nowIso, model, group, node, endpoint, workersJson,
--       nicsJson
-- Returns {'ok', epoch}
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'instance', ARGV[1], 'model', ARGV[4], 'group', ARGV[5],
  'node', ARGV[6], 'endpoint', ARGV[7], 'workers', ARGV[8], 'nics', ARGV[9],
  'registeredAt', ARGV[3], 'lastHeartbeat', ARGV[3])
redis.call('HDEL', KEYS[1], 'generation')
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return {'ok', tostring(epoch)}
