-- Renews the TTL of a registered loader and of the fragment templates its workers name, and carries
-- the loader's leases along: every unexpired lease it holds in its name on a generation of its model
-- (the one it serves, the one it is loading) lasts at least until its new expiry. A loader's lease
-- thus lives as long as the loader beats, and a loader that dies pins nothing for longer than the
-- lease it took or its registration's TTL. An expired lease is not revived: collection may already
-- have marked its generation (lease.lua refuses such a generation, and so does this script). A lease
-- that lapsed during an outage of every control-api instance (live-after.lua's rule, with graceMs)
-- is not expired for this purpose: gc-mark.lua keeps it, and the loader's first beat renews it.
-- Times come from the Redis server clock (see heartbeat.lua): the new expiry is ttlMs after now.
-- KEYS: hash, expiry zset. ARGV: member, ttlMs, template key prefix, templateTtlMs, key prefix,
-- graceMs, gapMs, last tick key, outage key
-- Returns {'ok', epoch, leases renewed, stamp (epoch microseconds of this beat)} | {'not-found'}
--@include live-after
if redis.call('EXISTS', KEYS[1]) == 0 then return {'not-found'} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stamp = t[1] .. string.format('%06d', tonumber(t[2]))
local expiry = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], expiry, ARGV[1])
redis.call('HSET', KEYS[1], 'lastHeartbeat', stamp)
local templates = redis.call('HGET', KEYS[1], 'templates')
if templates then
  for d in string.gmatch(templates, '%S+') do redis.call('PEXPIRE', ARGV[3] .. d, ARGV[4]) end
end
local after = live_after(now, ARGV[8], ARGV[9], ARGV[7], ARGV[6])
local renewed = 0
local model = redis.call('HGET', KEYS[1], 'model')
if model then
  local p = ARGV[5]
  for _, id in ipairs(redis.call('ZRANGE', p .. 'model:' .. model .. ':gens', 0, -1)) do
    local lk = p .. 'gen-leases:' .. model .. ':' .. id
    local held = redis.call('ZSCORE', lk, ARGV[1])
    if held and tonumber(held) > after and tonumber(held) < expiry
        and redis.call('HGET', p .. 'gen:' .. model .. ':' .. id, 'collecting') ~= '1' then
      redis.call('ZADD', lk, expiry, ARGV[1])
      renewed = renewed + 1
    end
  end
end
return {'ok', tostring(redis.call('HGET', KEYS[1], 'epoch')), tostring(renewed), stamp}
