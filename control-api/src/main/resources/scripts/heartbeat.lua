-- Renews the TTL of a registered segment owner or loader.
-- KEYS: hash, expiry zset. ARGV: member, expiryMs, nowIso
-- Returns {'ok'} | {'not-found'}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not-found'} end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[1], 'lastHeartbeat', ARGV[3])
return {'ok'}
