-- Records that a control-api instance is serving now (every instance runs this every
-- relay.registry.tick, 1 s): KEYS[1] holds the Redis server time of the last tick of any instance.
-- When that tick is older than gapMs, no control-api instance served in between, so no heartbeat
-- could be received: the window (from the last tick to now) is recorded in KEYS[2], and
-- live-after.lua gives the registrations that expired within it one TTL of grace. A window whose
-- grace (graceMs after its end) still ran when this one began is widened, not replaced, so a second
-- outage does not cut the first one's grace short.
-- KEYS: last tick, outage hash. ARGV: gapMs, graceMs (the longest registry TTL)
-- Returns {'ok'} | {'outage', fromMs, untilMs}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local raw = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], string.format('%d', now))
local last = raw and tonumber(raw)
if not last or now - last <= tonumber(ARGV[1]) then return {'ok'} end
local from = last
local prev = redis.call('HMGET', KEYS[2], 'from', 'until')
if prev[1] and prev[2] and tonumber(prev[2]) + tonumber(ARGV[2]) > last then
  from = math.min(from, tonumber(prev[1]))
end
redis.call('HSET', KEYS[2], 'from', string.format('%d', from), 'until', string.format('%d', now))
return {'outage', string.format('%d', from), string.format('%d', now)}
