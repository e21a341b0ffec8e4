-- Registers (or re-registers) a segment owner and starts its TTL.
-- KEYS: hash, expiry zset. ARGV: segment, expiryMs, nowIso, node, endpoint, size, adminUrl,
-- registeredBy (the caller's role: control-api calls an admin URL only when it is 'owner'),
-- segmentRole ('trainer' or 'storage-unit')
-- Returns {'ok'} | {'owned'}: a registration an owner made is never replaced by another role's
-- (a trainer token would drop its admin URL, and checkpoints could no longer reach the owner).
if ARGV[8] ~= 'owner' and redis.call('HGET', KEYS[1], 'registeredBy') == 'owner' then
  return {'owned'}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'segment', ARGV[1], 'node', ARGV[4], 'endpoint', ARGV[5],
  'size', ARGV[6], 'adminUrl', ARGV[7], 'registeredBy', ARGV[8], 'registeredAt', ARGV[3],
  'lastHeartbeat', ARGV[3], 'role', ARGV[9] or 'trainer')
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return {'ok'}
