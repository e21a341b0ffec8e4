-- Advances an update session: applies a phase timeout that has passed, then (unless ARGV[2] is
-- empty, a mere touch) one loader's report. Barriers: every participant PREPARED opens apply,
-- every participant APPLIED opens post-apply, every participant POST_APPLIED ends the session.
-- A failure before the apply barrier opened resumes the old generation; after it, the rollout
-- group pauses and rebuilds. The failing loader is named.
-- KEYS: session hash, participants hash, loader hash, channel
-- ARGV: nowMs, instance, epoch, phase, bytesRead, bytesPushed, bytesReceived, failingPeer,
--       error, generation
-- Returns {'ok', transitions...} | {'not-found'} | {'not-participant'} | {'fenced', epoch}
--       | {'closed', state} | {'out-of-order', state, participantPhase}
local s, pk, lk = KEYS[1], KEYS[2], KEYS[3]
local now = tonumber(ARGV[1])
if redis.call('EXISTS', s) == 0 then return {'not-found'} end
local level = {PREPARING = 0, PREPARED = 1, APPLYING = 2, APPLIED = 3, DONE = 4}
local transitions = {}
local state = redis.call('HGET', s, 'state')
local function terminal(st) return st == 'DONE' or st == 'RESUMED_OLD' or st == 'PAUSED_REBUILD' end
local function lvl(raw) return level[cjson.decode(raw).phase] or -1 end
local function first_below(min)
  local all = redis.call('HGETALL', pk)
  local names = {}
  for i = 1, #all, 2 do
    if lvl(all[i + 1]) < min then names[#names + 1] = all[i] end
  end
  table.sort(names)
  return names[1] or ''
end
local function fail(who, why)
  local next = state == 'PREPARING' and 'RESUMED_OLD' or 'PAUSED_REBUILD'
  redis.call('HSET', s, 'state', next, 'failedInstance', who, 'failure', why, 'endedAt', now)
  transitions[#transitions + 1] = 'failed:' .. next
  state = next
end
local function advance(next, duration, ms)
  local started = tonumber(redis.call('HGET', s, 'phaseStartedAt'))
  local timeout = tonumber(redis.call('HGET', s, 'timeoutMs'))
  redis.call('HSET', s, 'state', next, duration, now - started, 'phaseStartedAt', now,
    'phaseDeadline', now + timeout)
  if next == 'DONE' then redis.call('HSET', s, 'endedAt', now) end
  transitions[#transitions + 1] = ms .. ':' .. tostring(now - started)
  state = next
end

if not terminal(state) and now > tonumber(redis.call('HGET', s, 'phaseDeadline')) then
  local need = state == 'PREPARING' and 1 or (state == 'APPLYING' and 3 or 4)
  local who = first_below(need)
  fail(who, 'phase ' .. state .. ' timed out waiting for ' .. who)
end

if ARGV[2] ~= '' then
  local raw = redis.call('HGET', pk, ARGV[2])
  if not raw then
    if #transitions > 0 then redis.call('PUBLISH', KEYS[4], state) end
    return {'not-participant'}
  end
  if ARGV[3] ~= '' and redis.call('EXISTS', lk) == 1 then
    local epoch = redis.call('HGET', lk, 'epoch')
    if epoch and epoch ~= ARGV[3] then return {'fenced', epoch} end
  end
  local p = cjson.decode(raw)
  local phase = ARGV[4]
  local want = {PREPARED = 1, APPLYING = 2, APPLIED = 3, POST_APPLIED = 4}
  if phase == 'FAILED' then
    if terminal(state) then
      if #transitions > 0 then redis.call('PUBLISH', KEYS[4], state) end
      return {'closed', state}
    end
    local why = ARGV[9]
    if ARGV[8] ~= '' then why = why .. ' (failing peer: ' .. ARGV[8] .. ')' end
    fail(ARGV[2], why)
    p.phase = state
    p.error = ARGV[9]
  else
    local target = want[phase]
    local current = level[p.phase] or -1
    if current >= target then
      -- A repeated report (a retry) changes nothing.
      return {'ok'}
    end
    if terminal(state) then
      if #transitions > 0 then redis.call('PUBLISH', KEYS[4], state) end
      return {'closed', state}
    end
    local allowed = (target == 1 and state == 'PREPARING')
      or ((target == 2 or target == 3) and state == 'APPLYING')
      or (target == 4 and state == 'POST_APPLYING')
    if not allowed then return {'out-of-order', state, p.phase} end
    p.phase = target == 4 and 'DONE' or phase
  end
  if ARGV[5] ~= '' then p.bytesRead = ARGV[5] end
  if ARGV[6] ~= '' then p.bytesPushed = ARGV[6] end
  if ARGV[7] ~= '' then p.bytesReceived = ARGV[7] end
  redis.call('HSET', pk, ARGV[2], cjson.encode(p))
  if p.phase == 'DONE' and redis.call('EXISTS', lk) == 1 then
    redis.call('HSET', lk, 'generation', ARGV[10])
  end
  if not terminal(state) then
    local need = state == 'PREPARING' and 1 or (state == 'APPLYING' and 3 or 4)
    if first_below(need) == '' then
      if state == 'PREPARING' then advance('APPLYING', 'prepareMs', 'prepare')
      elseif state == 'APPLYING' then advance('POST_APPLYING', 'applyMs', 'apply')
      else advance('DONE', 'postApplyMs', 'post-apply') end
    end
  end
end
if #transitions > 0 or ARGV[2] ~= '' then redis.call('PUBLISH', KEYS[4], state) end
local r = {'ok'}
for _, t in ipairs(transitions) do r[#r + 1] = t end
return r
