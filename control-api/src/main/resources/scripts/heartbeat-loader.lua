-- Renews the TTL of a registered loader and of the fragment templates its workers name.
-- KEYS: hash, expiry zset. ARGV: member, expiryMs, nowIso, template key prefix, templateTtlMs
-- Returns {'ok', epoch} | {'not-found'}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not-found'} end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[1], 'lastHeartbeat', ARGV[3])
local templates = redis.call('HGET', KEYS[1], 'templates')
if templates then
  for d in string.gmatch(templates, '%S+') do redis.call('PEXPIRE', ARGV[4] .. d, ARGV[5]) end
end
return {'ok', tostring(redis.call('HGET', KEYS[1], 'epoch'))}
