-- Makes a committed generation active again (checkpoint restore), retiring the current one.
-- ARGV: prefix, model, generation, nowIso
-- Returns {'ok', previous or ''} | {'not-found'} | {'not-committed', state}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'state', 'collecting')
if not h[1] then return {'not-found'} end
if h[2] == '1' or (h[1] ~= 'ACTIVE' and h[1] ~= 'RETIRED') then
  return {'not-committed', h[1]}
end
local ak = p .. 'model:' .. m .. ':active'
local prev = redis.call('GET', ak)
if prev and prev ~= g then
  redis.call('HSET', p .. 'gen:' .. m .. ':' .. prev, 'state', 'RETIRED', 'retiredAt', ARGV[4])
end
redis.call('HSET', gk, 'state', 'ACTIVE', 'restoredAt', ARGV[4])
redis.call('HDEL', gk, 'retiredAt')
redis.call('SET', ak, g)
redis.call('PUBLISH', p .. 'events:active:' .. m, g)
return {'ok', prev or ''}
