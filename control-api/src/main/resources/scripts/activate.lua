-- Makes a committed generation active again (checkpoint restore), retiring the current one.
-- ARGV: prefix, model, generation (times from the Redis server clock, as in commit.lua)
-- Returns {'ok', previous or ''} | {'not-found'} | {'not-committed', state}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'state', 'collecting')
if not h[1] then return {'not-found'} end
if h[2] == '1' or (h[1] ~= 'ACTIVE' and h[1] ~= 'RETIRED') then
  return {'not-committed', h[1]}
end
local ak = p .. 'model:' .. m .. ':active'
local prev = redis.call('GET', ak)
if prev and prev ~= g then
  redis.call('HSET', p .. 'gen:' .. m .. ':' .. prev, 'state', 'RETIRED', 'retiredAt', now)
end
redis.call('HSET', gk, 'state', 'ACTIVE', 'restoredAt', now)
redis.call('HDEL', gk, 'retiredAt')
redis.call('SET', ak, g)
redis.call('PUBLISH', p .. 'events:active:' .. m, g)
return {'ok', prev or ''}
