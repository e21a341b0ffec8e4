-- The instant after which a registration's expiry makes it live, on the Redis server clock: now,
-- unless control-api was out (no instance ticked, tick.lua) while it expired. A registration that
-- expired after an outage began counts as live until ttlMs after the outage ended: its heartbeats
-- could not be received, and it gets one TTL to beat again. An outage still under way (the last
-- tick older than gapMs: this instance is back and has not ticked yet) ends now. A registration
-- that expired before the outage stays dead. update-step.lua applies the same rule to the session's
-- participants.
-- KEYS: last tick, outage hash. ARGV: ttlMs, gapMs
-- Returns {'ok', liveAfterMs, nowMs}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local after = now
local last = redis.call('GET', KEYS[1])
if last and now - tonumber(last) > tonumber(ARGV[2]) then after = math.min(after, tonumber(last)) end
local o = redis.call('HMGET', KEYS[2], 'from', 'until')
if o[1] and o[2] and now < tonumber(o[2]) + tonumber(ARGV[1]) then
  after = math.min(after, tonumber(o[1]))
end
return {'ok', string.format('%d', after), string.format('%d', now)}
