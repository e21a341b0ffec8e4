-- Marks a committed generation whose stored bytes a reader found not matching their published
-- checksum: no loader loads it any more. If it is the active one, the newest earlier generation
-- that is still whole (retired, not being collected, not corrupt) becomes active again, so
-- rebuilt and new engines load that.
-- ARGV: prefix, model, generation, object, detail
-- Returns {'ok', reactivated or ''} | {'not-found'}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
if redis.call('EXISTS', gk) == 0 then return {'not-found'} end
local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
redis.call('HSET', gk, 'corruptObject', ARGV[4], 'corruptDetail', ARGV[5], 'corruptAt', now)
local ak = p .. 'model:' .. m .. ':active'
if redis.call('GET', ak) ~= g then return {'ok', ''} end
local earlier = redis.call('ZREVRANGEBYSCORE', p .. 'model:' .. m .. ':gens', '(' .. g, '-inf')
for _, id in ipairs(earlier) do
  local h = redis.call('HMGET', p .. 'gen:' .. m .. ':' .. id, 'state', 'collecting', 'corruptObject')
  if h[1] == 'RETIRED' and h[2] ~= '1' and not h[3] then
    redis.call('HSET', gk, 'state', 'RETIRED', 'retiredAt', now)
    redis.call('HSET', p .. 'gen:' .. m .. ':' .. id, 'state', 'ACTIVE', 'restoredAt', now)
    redis.call('HDEL', p .. 'gen:' .. m .. ':' .. id, 'retiredAt')
    redis.call('SET', ak, id)
    redis.call('PUBLISH', p .. 'events:active:' .. m, id)
    return {'ok', id}
  end
end
return {'ok', ''}
