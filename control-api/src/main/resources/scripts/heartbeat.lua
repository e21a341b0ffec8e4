-- Renews the TTL of a registered segment owner or loader: its expiry becomes ttlMs after now on
-- the Redis server clock, the one clock every control-api instance shares (a replica whose own
-- clock is off must not make a member expire early or late for the others).
-- KEYS: hash, expiry zset. ARGV: member, ttlMs
-- Returns {'ok', stamp (epoch microseconds of this beat)} | {'not-found'}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not-found'} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stamp = t[1] .. string.format('%06d', tonumber(t[2]))
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[1], 'lastHeartbeat', stamp)
return {'ok', stamp}
