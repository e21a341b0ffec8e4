-- Registers (or re-registers) a segment owner and starts its TTL.
-- KEYS: hash, expiry zset. ARGV: segment, ttlMs (its expiry is that long after now on the Redis
-- server clock, see heartbeat.lua), node, endpoint, size, adminUrl,
-- registeredBy (the caller's role: control-api calls an admin URL only when it is 'owner'),
-- segmentRole ('trainer' or 'storage-unit'), storeEndpoint (on Mooncake: the endpoint the master
-- names the owner's replicas by; '' on the built-in engine)
-- Returns {'ok'} | {'owned'}: a registration an owner made is never replaced by another role's
-- (a trainer token would drop its admin URL, and checkpoints could no longer reach the owner).
if ARGV[7] ~= 'owner' and redis.call('HGET', KEYS[1], 'registeredBy') == 'owner' then
  return {'owned'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stamp = t[1] .. string.format('%06d', tonumber(t[2]))
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'segment', ARGV[1], 'node', ARGV[3], 'endpoint', ARGV[4],
  'size', ARGV[5], 'adminUrl', ARGV[6], 'registeredBy', ARGV[7], 'registeredAt', stamp,
  'lastHeartbeat', stamp, 'role', ARGV[8] or 'trainer', 'storeEndpoint', ARGV[9] or '')
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
return {'ok'}
