-- Commits a generation in one atomic step: refuses unless every manifest object is registered
-- with its manifest size and a checksum, and unless no newer generation is already active; then
-- activates it, retires the previous one and announces it.
-- ARGV: prefix, model, generation, nonce
-- Times come from the Redis server clock (epoch microseconds), so that every control-api
-- instance stamps in the order the scripts actually ran: a retirement never predates its commit.
-- Returns {'ok', previous or ''} | {'ok-retry'} | {'not-found'} | {'not-open', state}
--       | {'incomplete', missing, wrong, sample...} | {'stale', active}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
local h = redis.call('HMGET', gk, 'state', 'commitNonce', 'manifestDigest')
if not h[1] then return {'not-found'} end
if h[1] ~= 'OPEN' then
  -- The same request retried after a lost reply: it already won.
  if h[1] == 'ACTIVE' and h[2] == ARGV[4] then return {'ok-retry'} end
  return {'not-open', h[1]}
end
local sizes = p .. 'manifest-sizes:' .. m .. ':' .. h[3]
local objs = p .. 'gen-objects:' .. m .. ':' .. g
local missing, wrong, sample = 0, 0, {}
local expected = redis.call('HGETALL', sizes)
for i = 1, #expected, 2 do
  local frag, size = expected[i], expected[i + 1]
  local have = redis.call('HGET', objs, frag)
  if not have then
    missing = missing + 1
    if #sample < 20 then sample[#sample + 1] = 'missing ' .. frag end
  else
    local hs, hc = string.match(have, '^([^|]*)|([^|]*)|')
    if hs ~= size or hc == nil or hc == '' then
      wrong = wrong + 1
      if #sample < 20 then
        sample[#sample + 1] = 'wrong ' .. frag .. ' size ' .. tostring(hs) .. ' expected ' .. size
      end
    end
  end
end
if missing > 0 or wrong > 0 then
  local r = {'incomplete', tostring(missing), tostring(wrong)}
  for _, s in ipairs(sample) do r[#r + 1] = s end
  return r
end
local ak = p .. 'model:' .. m .. ':active'
local prev = redis.call('GET', ak)
if prev and tonumber(prev) > tonumber(g) then return {'stale', prev} end
if prev then
  redis.call('HSET', p .. 'gen:' .. m .. ':' .. prev, 'state', 'RETIRED', 'retiredAt', now)
end
redis.call('HSET', gk, 'state', 'ACTIVE', 'committedAt', now, 'commitNonce', ARGV[4])
redis.call('SET', ak, g)
redis.call('PUBLISH', p .. 'events:active:' .. m, g)
return {'ok', prev or ''}
