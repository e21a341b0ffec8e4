-- Aborts an open generation; the active generation is not touched.
-- ARGV: prefix, model, generation, reason (abortedAt from the Redis server clock)
-- Returns {'ok', 'aborted'|'again', manifestDigest} | {'not-found'} | {'not-open', state}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'state', 'manifestDigest')
if not h[1] then return {'not-found'} end
if h[1] == 'ABORTED' then return {'ok', 'again', h[2]} end
if h[1] ~= 'OPEN' then return {'not-open', h[1]} end
local t = redis.call('TIME')
local stamp = t[1] .. string.format('%06d', tonumber(t[2]))
redis.call('HSET', gk, 'state', 'ABORTED', 'abortReason', ARGV[4], 'abortedAt', stamp)
return {'ok', 'aborted', h[2]}
