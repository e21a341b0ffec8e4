-- Aborts an open generation; the active generation is not touched.
-- ARGV: prefix, model, generation, reason, nowIso
-- Returns {'ok', 'aborted'|'again', manifestDigest} | {'not-found'} | {'not-open', state}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'state', 'manifestDigest')
if not h[1] then return {'not-found'} end
if h[1] == 'ABORTED' then return {'ok', 'again', h[2]} end
if h[1] ~= 'OPEN' then return {'not-open', h[1]} end
redis.call('HSET', gk, 'state', 'ABORTED', 'abortReason', ARGV[4], 'abortedAt', ARGV[5])
return {'ok', 'aborted', h[2]}
