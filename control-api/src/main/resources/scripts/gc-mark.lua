-- Marks the generations garbage collection may remove: retired, aborted or lost, not active, and with
-- no unexpired lease. A marked generation refuses new leases, so a lease and a collection never
-- both win. Generations marked by an earlier, interrupted collection are returned again.
-- A lease has expired when its expiry is past the floor control-api passes: now on the Redis server
-- clock (see lease.lua), or the start of a control-plane outage whose grace still runs (a lease that
-- lapsed while nobody could receive its holder's renewals holds until the holder could renew it).
-- ARGV: prefix, model, floorMs
-- Returns {'ok', n, collect1..collectN, kept...}
local p, m = ARGV[1], ARGV[2]
local active = redis.call('GET', p .. 'model:' .. m .. ':active')
local ids = redis.call('ZRANGE', p .. 'model:' .. m .. ':gens', 0, -1)
local collect, kept = {}, {}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, id in ipairs(ids) do
  local gk = p .. 'gen:' .. m .. ':' .. id
  local h = redis.call('HMGET', gk, 'state', 'collecting')
  local lk = p .. 'gen-leases:' .. m .. ':' .. id
  redis.call('ZREMRANGEBYSCORE', lk, '-inf', math.min(now, tonumber(ARGV[3])))
  if id ~= active and (h[1] == 'RETIRED' or h[1] == 'ABORTED' or h[1] == 'LOST')
      and (h[2] == '1' or redis.call('ZCARD', lk) == 0) then
    redis.call('HSET', gk, 'collecting', '1')
    collect[#collect + 1] = id
  else
    kept[#kept + 1] = id
  end
end
local r = {'ok', tostring(#collect)}
for _, id in ipairs(collect) do r[#r + 1] = id end
for _, id in ipairs(kept) do r[#r + 1] = id end
return r
