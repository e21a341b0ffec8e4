-- Holds a generation against garbage collection for ttlMs from now on the Redis server clock, the
-- one every control-api instance shares: a replica whose own clock is off makes no lease lapse
-- early or outlive its TTL for the others (gc-mark.lua reads the same clock).
-- Other holders' leases are pruned only once they expired before floorMs (now, or the start of a
-- control-plane outage whose grace still runs: gc-mark.lua keeps those, and so does this script).
-- ARGV: prefix, model, generation, holder, ttlMs, floorMs
-- Returns {'ok', expiryMs} | {'not-found'} | {'not-leasable', state}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'state', 'collecting')
if not h[1] then return {'not-found'} end
if h[2] == '1' then return {'not-leasable', 'COLLECTING'} end
if h[1] ~= 'OPEN' and h[1] ~= 'ACTIVE' and h[1] ~= 'RETIRED' then return {'not-leasable', h[1]} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = now + tonumber(ARGV[5])
local lk = p .. 'gen-leases:' .. m .. ':' .. g
redis.call('ZREMRANGEBYSCORE', lk, '-inf', math.min(now, tonumber(ARGV[6])))
redis.call('ZADD', lk, expiry, ARGV[4])
return {'ok', string.format('%d', expiry)}
