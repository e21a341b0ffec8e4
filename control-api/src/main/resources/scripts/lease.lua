-- Holds a generation against garbage collection until expiryMs.
-- ARGV: prefix, model, generation, holder, expiryMs, nowMs
-- Returns {'ok'} | {'not-found'} | {'not-leasable', state}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'state', 'collecting')
if not h[1] then return {'not-found'} end
if h[2] == '1' then return {'not-leasable', 'COLLECTING'} end
if h[1] ~= 'OPEN' and h[1] ~= 'ACTIVE' and h[1] ~= 'RETIRED' then return {'not-leasable', h[1]} end
local lk = p .. 'gen-leases:' .. m .. ':' .. g
redis.call('ZREMRANGEBYSCORE', lk, '-inf', ARGV[6])
redis.call('ZADD', lk, ARGV[5], ARGV[4])
return {'ok'}
