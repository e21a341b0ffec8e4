-- Forgets a collected generation once its store objects are gone, and its manifest when no
-- remaining generation of the model uses it.
-- ARGV: prefix, model, generation
-- Returns {'ok', 'manifest-kept' | 'manifest-removed'} | {'gone'} | {'not-collecting'}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'collecting', 'trainerStep', 'manifestDigest')
if not h[3] then return {'gone'} end
if h[1] ~= '1' then return {'not-collecting'} end
redis.call('DEL', gk, p .. 'gen-objects:' .. m .. ':' .. g, p .. 'gen-leases:' .. m .. ':' .. g,
  p .. 'checkpoint:' .. m .. ':' .. g)
local gens = p .. 'model:' .. m .. ':gens'
redis.call('ZREM', gens, g)
local steps = p .. 'model:' .. m .. ':steps'
if redis.call('HGET', steps, h[2]) == g then redis.call('HDEL', steps, h[2]) end
for _, id in ipairs(redis.call('ZRANGE', gens, 0, -1)) do
  if redis.call('HGET', p .. 'gen:' .. m .. ':' .. id, 'manifestDigest') == h[3] then
    return {'ok', 'manifest-kept'}
  end
end
redis.call('DEL', p .. 'manifest:' .. m .. ':' .. h[3], p .. 'manifest-encoded:' .. m .. ':' .. h[3],
  p .. 'manifest-sizes:' .. m .. ':' .. h[3])
return {'ok', 'manifest-removed'}
