-- Advances an update session: applies a phase timeout that has passed, then (unless ARGV[1] is
-- empty, a mere touch) one loader's report. Barriers: every participant PREPARED opens apply,
-- every participant APPLIED opens post-apply (after control-api proved the bytes read against the
-- published checksums, when ARGV[10] asks for it: the script then claims the verification and
-- answers 'verify', and update-verified.lua advances or fails the session), every participant
-- POST_APPLIED ends the session. A failure before the apply barrier opened resumes the old
-- generation; after it, the rollout group pauses and rebuilds, unless no participant's fetch writes
-- what its engine serves from (servesThroughFetch, said with PREPARED: compat or staged direct
-- workers, whether the engine serves meanwhile or drained): then a failure before the applied
-- barrier resumes the old generation too, no engine having installed anything. The failing loader
-- is named.
-- Fencing: a report must carry the loader's current epoch (epochs are unique across loaders, so
-- another loader's is foreign and an earlier one of its own stale), and every report of one
-- participant comes from the life that joined: a loader re-registered after apply began fails
-- the session.
-- A touch also fails the session, naming the loader, when a participant that has not reached the
-- open barrier is no longer registered (its registry expiry passed or it deregistered): a loader
-- that died or froze silently is named within its registration TTL, not the phase timeout. A
-- registration that expired while no control-api instance served (the outage tick.lua records)
-- is not gone until one TTL after the outage ended: the rule of live-after.lua, applied here.
-- SENT sits between APPLYING and APPLIED: the loader's own writes all landed, and it hands the
-- digests of what it wrote into each instance's buffers (ARGV[16], ARGV[17]: destination, base64,
-- pairs) to the sent hash, field '<destination>><sender>', and marks the participant sent. Every
-- participant sent opens the sent barrier (the session stays APPLYING); each receiver then proves its buffers against what was sent
-- to it and reports APPLIED, or FAILED naming the sender, before any engine can advance.
-- KEYS: session hash, participants hash, loader hash, channel, checksums hash, loader expiry zset,
--       last control-api tick, outage hash, sent hash
-- ARGV: instance, epoch, phase, bytesRead, bytesPushed, bytesReceived, failingPeer, error,
--       checksums (base64), verify ('1' or ''), generation, key prefix, loader ttlMs, outage gapMs,
--       attempt (the report's, '' when it names none), then with SENT: destination, digests (base64), ...; with POST_APPLIED: fetchMs,
--       installMs, pauseMs (each may be empty), of which the session hash keeps the largest;
--       with PREPARED: '1' when the loader's fetch writes nothing its engine serves from
--       (servesThroughFetch)
-- Now is the Redis server clock's, the one every control-api instance shares: phase deadlines
-- and registry expiries written through one replica are judged the same through every other.
-- A loader's POST_APPLIED records the generation it serves in its loader hash and releases every
-- lease it holds in its name on the model's other generations.
-- Post-apply never fails the session: once the applied barrier opened, every loader applied and its
-- reads were proven, and each engine advances on its own. A POST_APPLIED that does not come (its
-- reply lost, the loader restarted or gone) ends the session DONE at the phase timeout, or as soon
-- as every silent participant is gone (unregistered, or registered again by a new life), with
-- those participants left at APPLIED (unconfirmed). A POST_APPLIED a loader sends later (it retries
-- until control-api answers) still confirms it: it records the generation and releases the leases
-- as it would have before the end.
-- Attempts: update-start.lua retries a session that ended RESUMED_OLD as the next attempt (the
-- hash's 'attempt', 1 when absent). A report naming another attempt than the session's is refused
-- before it touches anything ('stale-attempt'): it belongs to an attempt that ended. A report
-- naming none is taken as the current attempt's (loaders that predate attempts). A FAILED report
-- marks its participant 'ended', also once the session had ended: update-start.lua retries only
-- once no member of the failed attempt can still act in it.
-- Returns {'ok', transitions...} | {'not-found'} | {'not-participant'} | {'no-epoch'}
--       | {'fenced', reason, registeredEpoch} | {'closed', state}
--       | {'stale-attempt', reportedAttempt, sessionAttempt, state}
--       | {'out-of-order', state, participantPhase}
-- Transitions: 'prepare:ms', 'apply:ms', 'post-apply:ms', 'failed:STATE', 'verify:0'.
--@include live-after
local s, pk, lk = KEYS[1], KEYS[2], KEYS[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('EXISTS', s) == 0 then return {'not-found'} end
local level = {PREPARING = 0, PREPARED = 1, APPLYING = 2, SENT = 2.5, APPLIED = 3, DONE = 4}
local transitions = {}
local state = redis.call('HGET', s, 'state')
local function terminal(st) return st == 'DONE' or st == 'RESUMED_OLD' or st == 'PAUSED_REBUILD' end
local function lvl(raw) return level[cjson.decode(raw).phase] or -1 end
-- The level every participant must reach before the session leaves its current state.
local function needed() return state == 'PREPARING' and 1 or (state == 'APPLYING' and 3 or 4) end
local function first_below(min)
  local all = redis.call('HGETALL', pk)
  local names = {}
  for i = 1, #all, 2 do
    if lvl(all[i + 1]) < min then names[#names + 1] = all[i] end
  end
  table.sort(names)
  return names[1] or ''
end
local function confirm_missing()
  -- Post-apply ends DONE; who did not report stays APPLIED in the participants.
  local started = tonumber(redis.call('HGET', s, 'phaseStartedAt'))
  redis.call('HSET', s, 'state', 'DONE', 'postApplyMs', now - started, 'endedAt', now,
    'unconfirmed', first_below(4))
  transitions[#transitions + 1] = 'post-apply:' .. tostring(now - started)
  state = 'DONE'
end
-- Whether every participant said with PREPARED that its fetch writes nothing its engine serves
-- from: its install, the first write into what the engine serves from, comes after the applied
-- barrier.
local function all_serve_through_fetch()
  local all = redis.call('HGETALL', pk)
  for i = 2, #all, 2 do
    if not cjson.decode(all[i]).servesThroughFetch then return false end
  end
  return true
end
local function fail(who, why)
  -- Before the prepared barrier nothing was written; before the applied barrier, of a group whose
  -- fetches all write apart from the served weights, nothing any engine serves from was: all
  -- resume the old generation, never paused. Otherwise served weights may hold a mix: the group
  -- rebuilds.
  local old = state == 'PREPARING' or (state == 'APPLYING' and all_serve_through_fetch())
  local next = old and 'RESUMED_OLD' or 'PAUSED_REBUILD'
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

local CLAIM_MS = 30000
local function claim_verification()
  redis.call('HSET', s, 'verifyClaim', now + CLAIM_MS)
  transitions[#transitions + 1] = 'verify:0'
end

if not terminal(state) and now > tonumber(redis.call('HGET', s, 'phaseDeadline')) then
  local who = first_below(needed())
  if state == 'POST_APPLYING' then
    confirm_missing()
  elseif who == '' and state == 'APPLYING' then
    fail('control-api', 'phase APPLYING timed out verifying the checksums of what was read')
  else
    fail(who, 'phase ' .. state .. ' timed out waiting for ' .. who)
  end
end

if ARGV[1] == '' and not terminal(state) then
  local need = needed()
  -- live-after.lua's rule: live means an expiry after now, or after the start of an outage of
  -- every control-api instance whose grace (one TTL after it ended) still runs.
  local after = live_after(now, KEYS[7], KEYS[8], ARGV[14], ARGV[13])
  local all = redis.call('HGETALL', pk)
  local gone = {}
  for i = 1, #all, 2 do
    if lvl(all[i + 1]) < need then
      local expiry = redis.call('ZSCORE', KEYS[6], all[i])
      if not expiry or tonumber(expiry) < after then gone[#gone + 1] = all[i] end
    end
  end
  if state == 'POST_APPLYING' then
    -- Silent participants whose loader is gone or came back as a new life (its engine's buffers
    -- are new): none of them will confirm, so waiting for the phase timeout serves no one.
    local silent = 0
    for i = 1, #all, 2 do
      if lvl(all[i + 1]) < need then
        silent = silent + 1
        local joined = cjson.decode(all[i + 1]).epoch
        local lkey = ARGV[12] .. 'loader:' .. all[i]
        local now_epoch = redis.call('HGET', lkey, 'epoch')
        local gone_already = false
        for _, g in ipairs(gone) do if g == all[i] then gone_already = true end end
        if not gone_already and joined and now_epoch and tostring(joined) ~= now_epoch then
          gone[#gone + 1] = all[i]
        end
      end
    end
    if silent > 0 and #gone == silent then confirm_missing() end
  elseif #gone > 0 then
    table.sort(gone)
    fail(gone[1], 'loader ' .. gone[1] .. ' is no longer registered (its heartbeats stopped or it'
      .. ' deregistered) and never reported ' .. (need == 1 and 'PREPARED'
      or (need == 3 and 'APPLIED' or 'DONE')))
  end
end

if ARGV[1] == '' and state == 'APPLYING' then
  -- A verifier that died with its claim: the next touch takes the verification over.
  local claim = redis.call('HGET', s, 'verifyClaim')
  if claim and now > tonumber(claim) then claim_verification() end
end

if ARGV[1] ~= '' then
  local attempt = redis.call('HGET', s, 'attempt') or '1'
  if ARGV[15] ~= '' and ARGV[15] ~= attempt then
    if #transitions > 0 then redis.call('PUBLISH', KEYS[4], state) end
    return {'stale-attempt', ARGV[15], attempt, state}
  end
  local raw = redis.call('HGET', pk, ARGV[1])
  if not raw then
    if #transitions > 0 then redis.call('PUBLISH', KEYS[4], state) end
    return {'not-participant'}
  end
  local epoch = ARGV[2]
  if epoch == '' then return {'no-epoch'} end
  if redis.call('EXISTS', lk) == 0 then return {'fenced', 'unregistered', ''} end
  local registered = redis.call('HGET', lk, 'epoch') or ''
  if registered ~= epoch then
    local reason = 'foreign'
    for e in string.gmatch(redis.call('HGET', lk, 'previousEpochs') or '', '%S+') do
      if e == epoch then reason = 'stale' end
    end
    return {'fenced', reason, registered}
  end
  local p = cjson.decode(raw)
  if p.epoch and p.epoch ~= epoch and state == 'POST_APPLYING' then
    -- Its earlier life applied and passed the proof; the others advanced. It confirms nothing now.
    if #transitions > 0 then redis.call('PUBLISH', KEYS[4], state) end
    return {'fenced', 'restarted', p.epoch}
  end
  if p.epoch and p.epoch ~= epoch and not terminal(state) and state ~= 'PREPARING' then
    -- The life that joined the session is gone, and with it what it applied.
    local joined = p.epoch
    fail(ARGV[1], 'loader ' .. ARGV[1] .. ' re-registered during the update (epoch ' .. joined
      .. ' joined, now ' .. epoch .. '); what its earlier life applied is lost')
    p.phase = state
    p.error = 're-registered during the update'
    redis.call('HSET', pk, ARGV[1], cjson.encode(p))
    redis.call('PUBLISH', KEYS[4], state)
    return {'fenced', 'restarted', joined}
  end
  local same_life = not p.epoch or p.epoch == epoch
  p.epoch = epoch
  local phase = ARGV[3]
  local want = {PREPARED = 1, APPLYING = 2, SENT = 2.5, APPLIED = 3, POST_APPLIED = 4}
  if phase == 'FAILED' then
    if terminal(state) then
      -- Too late to change the session, but this member has ended its part in it.
      if same_life and not p.ended then
        p.ended = true
        redis.call('HSET', pk, ARGV[1], cjson.encode(p))
      end
      if #transitions > 0 then redis.call('PUBLISH', KEYS[4], state) end
      return {'closed', state}
    end
    local why = ARGV[8]
    if ARGV[7] ~= '' then why = why .. ' (failing peer: ' .. ARGV[7] .. ')' end
    fail(ARGV[1], why)
    p.phase = state
    p.ended = true
    p.error = ARGV[8]
    if ARGV[7] ~= '' then p.failingPeer = ARGV[7] end
  else
    local target = want[phase]
    local current = level[p.phase] or -1
    -- What a loader sent counts even when its phase already passed SENT (an APPLIED someone
    -- reported in its name while it still applied): the sent barrier waits for its own SENT.
    local sent_late = phase == 'SENT' and not p.sent and state == 'APPLYING' and same_life
    if current >= target and not sent_late then
      -- A repeated report (a retry) changes nothing.
      return {'ok'}
    end
    local late = target == 4 and state == 'DONE' and current == 3 and same_life
    if terminal(state) and not late then
      if #transitions > 0 then redis.call('PUBLISH', KEYS[4], state) end
      return {'closed', state}
    end
    local allowed = late or (target == 1 and state == 'PREPARING')
      or ((target == 2 or target == 2.5 or target == 3) and state == 'APPLYING')
      or (target == 4 and state == 'POST_APPLYING')
    if not allowed then return {'out-of-order', state, p.phase} end
    if current < target then p.phase = target == 4 and 'DONE' or phase end
    if phase == 'SENT' then p.sent = true end
    if phase == 'PREPARED' and ARGV[16] == '1' then p.servesThroughFetch = true end
  end
  -- A participant's counts only grow within a session: a later report without counts (loaders
  -- send 0 with PREPARED and POST_APPLIED) keeps what its APPLIED report said.
  local function grow(field, value)
    if value ~= '' and (p[field] == nil or tonumber(value) > tonumber(p[field])) then
      p[field] = value
    end
  end
  grow('bytesRead', ARGV[4])
  grow('bytesPushed', ARGV[5])
  grow('bytesReceived', ARGV[6])
  redis.call('HSET', pk, ARGV[1], cjson.encode(p))
  if state == 'DONE' then redis.call('HSET', s, 'unconfirmed', first_below(4)) end
  if phase == 'SENT' then
    for i = 16, #ARGV - 1, 2 do
      redis.call('HSET', KEYS[9], ARGV[i] .. '>' .. ARGV[1], ARGV[i + 1])
    end
    local ttl = redis.call('TTL', s)
    if ttl > 0 and redis.call('EXISTS', KEYS[9]) == 1 then redis.call('EXPIRE', KEYS[9], ttl) end
  end
  if phase == 'POST_APPLIED' then
    -- The update as the engines lived it: the session keeps the slowest loader's of each.
    for i, field in ipairs({'fetchMs', 'installMs', 'pauseMs'}) do
      local v = ARGV[15 + i]
      if v and v ~= '' then
        local had = redis.call('HGET', s, field)
        if not had or tonumber(v) > tonumber(had) then redis.call('HSET', s, field, v) end
      end
    end
  end
  if phase == 'APPLIED' and ARGV[9] ~= '' then
    redis.call('HSET', KEYS[5], ARGV[1], ARGV[9])
    local ttl = redis.call('TTL', s)
    if ttl > 0 then redis.call('EXPIRE', KEYS[5], ttl) end
  end
  if p.phase == 'DONE' and redis.call('EXISTS', lk) == 1 then
    redis.call('HSET', lk, 'generation', ARGV[11])
    -- Serving this generation now, the loader needs no lease on another of its model: the one it
    -- served before, and any a failed update left behind, end in the step that ends its update,
    -- so no lost release call (and no heartbeat carrying its leases) keeps them from collection.
    local model = redis.call('HGET', lk, 'model')
    if model then
      local pre = ARGV[12]
      for _, id in ipairs(redis.call('ZRANGE', pre .. 'model:' .. model .. ':gens', 0, -1)) do
        if id ~= ARGV[11] then
          redis.call('ZREM', pre .. 'gen-leases:' .. model .. ':' .. id, ARGV[1])
        end
      end
    end
  end
  if not terminal(state) then
    if first_below(needed()) == '' then
      if state == 'PREPARING' then advance('APPLYING', 'prepareMs', 'prepare')
      elseif state == 'APPLYING' then
        if ARGV[10] == '1' then
          if not redis.call('HGET', s, 'verifyClaim') then claim_verification() end
        else
          advance('POST_APPLYING', 'applyMs', 'apply')
        end
      else advance('DONE', 'postApplyMs', 'post-apply') end
    end
  end
end
if #transitions > 0 or ARGV[1] ~= '' then redis.call('PUBLISH', KEYS[4], state) end
local r = {'ok'}
for _, t in ipairs(transitions) do r[#r + 1] = t end
return r
