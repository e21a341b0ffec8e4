-- Marks a generation whose stored bytes are gone: a committed one becomes LOST (never leased or
-- loaded again), an open one ABORTED. If the lost one is active, the newest earlier generation
-- that is still whole (retired, not being collected, not corrupt) becomes active again, so rebuilt
-- and new engines load that; with none, the active pointer stays on the lost one, which says so.
-- Idempotent.
-- ARGV: prefix, model, generation, reason (times from the Redis server clock)
-- Returns {'ok', 'lost'|'aborted'|'again', state, manifestDigest, reactivated or ''} | {'not-found'}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'state', 'manifestDigest')
local t = redis.call('TIME')
local stamp = t[1] .. string.format('%06d', tonumber(t[2]))
if not h[1] then return {'not-found'} end
if h[1] == 'OPEN' then
  redis.call('HSET', gk, 'state', 'ABORTED', 'abortReason', ARGV[4], 'abortedAt', stamp)
  return {'ok', 'aborted', 'ABORTED', h[2], ''}
end
if h[1] ~= 'ACTIVE' and h[1] ~= 'RETIRED' then return {'ok', 'again', h[1], h[2], ''} end
redis.call('HSET', gk, 'state', 'LOST', 'lostReason', ARGV[4], 'lostAt', stamp)
local ak = p .. 'model:' .. m .. ':active'
if h[1] ~= 'ACTIVE' or redis.call('GET', ak) ~= g then return {'ok', 'lost', 'LOST', h[2], ''} end
local earlier = redis.call('ZREVRANGEBYSCORE', p .. 'model:' .. m .. ':gens', '(' .. g, '-inf')
for _, id in ipairs(earlier) do
  local e = redis.call('HMGET', p .. 'gen:' .. m .. ':' .. id, 'state', 'collecting', 'corruptObject')
  if e[1] == 'RETIRED' and e[2] ~= '1' and not e[3] then
    redis.call('HSET', p .. 'gen:' .. m .. ':' .. id, 'state', 'ACTIVE', 'restoredAt', stamp)
    redis.call('HDEL', p .. 'gen:' .. m .. ':' .. id, 'retiredAt')
    redis.call('SET', ak, id)
    redis.call('PUBLISH', p .. 'events:active:' .. m, id)
    return {'ok', 'lost', 'LOST', h[2], id}
  end
end
return {'ok', 'lost', 'LOST', h[2], ''}
