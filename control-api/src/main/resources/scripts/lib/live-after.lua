-- live_after(now, lastTickKey, outageKey, gapMs, graceMs): the liveness rule every script that
-- judges a registration's expiry applies, defined once (ScriptCall puts it where a script's
-- include line names it). The instant (ms, Redis server clock) after which an expiry makes a
-- registration live: now, unless control-api was out (no instance ticked, tick.lua) while it
-- expired. A registration that expired after an outage began counts as live until graceMs after
-- the outage ended; an outage still under way (the last tick older than gapMs) ends now.
local function live_after(now, lastTickKey, outageKey, gapMs, graceMs)
  local after = now
  local last = redis.call('GET', lastTickKey)
  if last and now - tonumber(last) > tonumber(gapMs) then after = math.min(after, tonumber(last)) end
  local o = redis.call('HMGET', outageKey, 'from', 'until')
  if o[1] and o[2] and now < tonumber(o[2]) + tonumber(graceMs) then
    after = math.min(after, tonumber(o[1]))
  end
  return after
end
