-- Marks a generation whose stored bytes are gone: a committed one becomes LOST (never leased or
-- loaded again; the active pointer stays where it is), an open one ABORTED. Idempotent.
-- ARGV: prefix, model, generation, reason, nowIso
-- Returns {'ok', 'lost'|'aborted'|'again', state, manifestDigest} | {'not-found'}
local p, m, g = ARGV[1], ARGV[2], ARGV[3]
local gk = p .. 'gen:' .. m .. ':' .. g
local h = redis.call('HMGET', gk, 'state', 'manifestDigest')
if not h[1] then return {'not-found'} end
if h[1] == 'LOST' then return {'ok', 'again', h[1], h[2]} end
if h[1] == 'ACTIVE' or h[1] == 'RETIRED' then
  redis.call('HSET', gk, 'state', 'LOST', 'lostReason', ARGV[4], 'lostAt', ARGV[5])
  return {'ok', 'lost', 'LOST', h[2]}
end
if h[1] == 'OPEN' then
  redis.call('HSET', gk, 'state', 'ABORTED', 'abortReason', ARGV[4], 'abortedAt', ARGV[5])
  return {'ok', 'aborted', 'ABORTED', h[2]}
end
return {'ok', 'again', h[1], h[2]}
