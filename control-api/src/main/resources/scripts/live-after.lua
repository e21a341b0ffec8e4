-- The instant after which a registration's expiry makes it live, on the Redis server clock: now,
-- unless control-api was out (no instance ticked, tick.lua) while it expired. A registration that
-- expired after an outage began counts as live until ttlMs after the outage ended: its heartbeats
-- could not be received, and it gets one TTL to beat again. An outage still under way (the last
-- tick older than gapMs: this instance is back and has not ticked yet) ends now. A registration
-- that expired before the outage stays dead. update-step.lua applies the same rule to the session's
-- participants.
-- KEYS: last tick, outage hash. ARGV: ttlMs, gapMs
-- Returns {'ok', liveAfterMs, nowMs}
--@include live-after
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local after = live_after(now, KEYS[1], KEYS[2], ARGV[2], ARGV[1])
return {'ok', string.format('%d', after), string.format('%d', now)}
