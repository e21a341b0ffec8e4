-- Registers a batch of stored objects of an open generation, all or nothing.
-- ARGV: prefix, model, generation, n, then n times: fragment, size, checksum, segments
-- Returns {'ok', newlyRegistered, registered, expected} | {'not-found'} | {'not-open', state}
--       | {'unknown-object', fragment} | {'size-mismatch', fragment, expected, size}
--       | {'object-conflict', fragment, size, checksum}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'state', 'manifestDigest', 'objectsExpected')
if not h[1] then return {'not-found'} end
if h[1] ~= 'OPEN' then return {'not-open', h[1]} end
local sizes = p .. 'manifest-sizes:' .. m .. ':' .. h[2]
local objs = p .. 'gen-objects:' .. m .. ':' .. g
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local b = 5 + i * 4
  local frag, size, sum = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local expected = redis.call('HGET', sizes, frag)
  if not expected then return {'unknown-object', frag} end
  if expected ~= size then return {'size-mismatch', frag, expected, size} end
  local have = redis.call('HGET', objs, frag)
  if have then
    local hs, hc = string.match(have, '^([^|]*)|([^|]*)|')
    if hs ~= size or hc ~= sum then return {'object-conflict', frag, tostring(hs), tostring(hc)} end
  end
end
local fresh = 0
for i = 0, n - 1 do
  local b = 5 + i * 4
  fresh = fresh + redis.call('HSET', objs, ARGV[b], ARGV[b + 1] .. '|' .. ARGV[b + 2] .. '|' .. ARGV[b + 3])
end
local count = redis.call('HLEN', objs)
redis.call('HSET', gk, 'objectsRegistered', count)
return {'ok', tostring(fresh), tostring(count), h[3]}
