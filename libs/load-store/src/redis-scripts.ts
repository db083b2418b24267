/**
 * Lua scripts of RedisLoadStore. Every key of a pool shares one hash tag
 * (`sy:{pool}:…`), so a script touches one slot; KEYS[1] names the pool's
 * registry hash for routing, the rest are built from the prefix in ARGV[1].
 * Times come from Redis TIME, so every proxy and the control plane share one clock.
 *
 * Selection runs on two sorted sets per model, holding the instances that are alive and
 * have room (all scores 0, so members order bytewise, as libs/routing orders ids):
 * - `ld:<model>`: sat .. pack(load, waiting, qps) .. id, where sat is '0' or '1' and the
 *   numbers are big-endian doubles (non-negative, so their bytes order as the numbers do):
 *   the lowest member is least_load's answer, and its ties share its 25-byte prefix.
 * - `ix:<model>`: sat .. id, for round_robin, random and power_of_two by rank.
 * Instances at max_inflight wait in the set `fl:<model>`. `ixs` keeps each instance's
 * place ('F' when full, its prefix when open, absent when out) so it can be moved in
 * O(log N); `im:<id>` lists its models. An instance whose ttl lapsed leaves the sets when
 * the control plane sweeps, or lazily when a selection lands on it.
 */

const NOW = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * Liveness is judged now while the control plane keeps claiming, and at most at `watch` (its last
 * claim plus one renewal interval) when it stops: liveness freezes then, before its lease even
 * lapses, so no one expires and proxies keep routing on the last liveness. Never claimed: now.
 */
const JUDGED_AT = `
local function judged_at(p, now)
  local watch = tonumber(redis.call('HGET', p .. 'cp', 'watch') or '')
  if watch and watch < now then return watch end
  return now
end
local function alive_at(p, id, at)
  if redis.call('HEXISTS', p .. 'down', id) == 1 then return false end
  local e = tonumber(redis.call('HGET', p .. 'exp', id) or '')
  return e ~= nil and e >= at
end
`;

/** The selection index (see the header): where an instance belongs, and moving it there. */
const INDEX = `${JUDGED_AT}
local function num(x)
  -- -0 and NaN would break the byte order of packed doubles.
  if x ~= x or x <= 0 then return 0 end
  return x
end
local function open_prefix(sat, load, waiting, qps)
  return sat .. struct.pack('>ddd', num(load), num(waiting), num(qps))
end
-- 'F' (full), the open prefix, or false (not alive: out of selection).
local function desired(p, id, at)
  if not alive_at(p, id, at) then return false end
  local n = tonumber(redis.call('HGET', p .. 'inflight', id) or '0') or 0
  local mx = tonumber(redis.call('HGET', p .. 'max', id) or '')
  if mx and n >= mx then return 'F' end
  local w = tonumber(redis.call('HGET', p .. 'w', id) or '1') or 1
  local sat = '0'
  if redis.call('HEXISTS', p .. 'sat', id) == 1 then sat = '1' end
  local waiting = tonumber(redis.call('HGET', p .. 'wait', id) or '0') or 0
  local qps = tonumber(redis.call('HGET', p .. 'qps', id) or '0') or 0
  return open_prefix(sat, n / w, waiting, num(qps) / w)
end
local function place(p, id, new)
  local old = redis.call('HGET', p .. 'ixs', id)
  if old == new then return end
  local same_ix = old and new and old ~= 'F' and new ~= 'F' and string.sub(old, 1, 1) == string.sub(new, 1, 1)
  for _, m in ipairs(redis.call('SMEMBERS', p .. 'im:' .. id)) do
    if old == 'F' then
      redis.call('SREM', p .. 'fl:' .. m, id)
    elseif old then
      redis.call('ZREM', p .. 'ld:' .. m, old .. id)
      if not same_ix then redis.call('ZREM', p .. 'ix:' .. m, string.sub(old, 1, 1) .. id) end
    end
    if new == 'F' then
      redis.call('SADD', p .. 'fl:' .. m, id)
    elseif new then
      redis.call('ZADD', p .. 'ld:' .. m, 0, new .. id)
      if not same_ix then redis.call('ZADD', p .. 'ix:' .. m, 0, string.sub(new, 1, 1) .. id) end
    end
  end
  if new then redis.call('HSET', p .. 'ixs', id, new) else redis.call('HDEL', p .. 'ixs', id) end
end
local function reindex(p, id, at)
  place(p, id, desired(p, id, at))
end
-- After an in-flight change of an open or full instance: only the load part moves.
local function moved(p, id, old, n)
  local mx = tonumber(redis.call('HGET', p .. 'max', id) or '')
  if mx and n >= mx then return 'F' end
  if old == 'F' then return nil end
  local w = tonumber(redis.call('HGET', p .. 'w', id) or '1') or 1
  return string.sub(old, 1, 1) .. struct.pack('>d', num(n / w)) .. string.sub(old, 10)
end
`;

/** ARGV: prefix, id, record JSON, url, weight, max_inflight ('' = none), ttl_ms, models JSON. Returns 1 when created. */
export const REGISTER = `${NOW}${INDEX}
local p, id = ARGV[1], ARGV[2]
local now = now_ms()
local created = 0
place(p, id, false)
local old = redis.call('HGET', p .. 'models', id)
if old then
  for _, m in ipairs(cjson.decode(old)) do redis.call('SREM', p .. 'model:' .. m, id) end
else
  created = 1
  redis.call('HSET', p .. 'reg', id, now)
  redis.call('HSET', p .. 'inflight', id, 0)
end
redis.call('DEL', p .. 'im:' .. id)
redis.call('HSET', p .. 'rec', id, ARGV[3])
redis.call('HSET', p .. 'url', id, ARGV[4])
redis.call('HSET', p .. 'w', id, ARGV[5])
if ARGV[6] == '' then redis.call('HDEL', p .. 'max', id) else redis.call('HSET', p .. 'max', id, ARGV[6]) end
redis.call('HSET', p .. 'ttl', id, ARGV[7])
redis.call('HSET', p .. 'models', id, ARGV[8])
for _, m in ipairs(cjson.decode(ARGV[8])) do
  redis.call('SADD', p .. 'model:' .. m, id)
  redis.call('SADD', p .. 'im:' .. id, m)
end
redis.call('HSET', p .. 'seen', id, now)
redis.call('HSET', p .. 'exp', id, now + tonumber(ARGV[7]))
redis.call('HDEL', p .. 'down', id)
redis.call('ZADD', p .. 'live', now + tonumber(ARGV[7]), id)
reindex(p, id, judged_at(p, now))
redis.call('INCR', p .. 'ver')
return created
`;

/**
 * A heartbeat or a successful probe. ARGV: prefix, id, qps_1m ('' = not given), gpu_util ('' = not given).
 * Returns 0 when unknown, 1 when it was alive, 2 when this beat revived it.
 */
export const HEARTBEAT = `${NOW}${INDEX}
local p, id = ARGV[1], ARGV[2]
local ttl = redis.call('HGET', p .. 'ttl', id)
if not ttl then return 0 end
local now = now_ms()
local at = judged_at(p, now)
local was = alive_at(p, id, at)
redis.call('HSET', p .. 'seen', id, now)
redis.call('HSET', p .. 'exp', id, now + tonumber(ttl))
redis.call('HDEL', p .. 'down', id)
redis.call('ZADD', p .. 'live', now + tonumber(ttl), id)
if ARGV[3] ~= '' then redis.call('HSET', p .. 'qps', id, ARGV[3]) end
if ARGV[4] ~= '' then redis.call('HSET', p .. 'gpu', id, ARGV[4]) end
reindex(p, id, at)
if was then return 1 end
return 2
`;

/**
 * ARGV: prefix, id, signals JSON (stored for reads only, never decoded here), waiting ('' = unknown), saturated (1/0).
 * Returns 0 when unknown. Selection reads waiting and saturated through the index, never as JSON.
 */
export const REPORT_ENGINE = `${NOW}${INDEX}
local p, id = ARGV[1], ARGV[2]
if redis.call('HEXISTS', p .. 'rec', id) == 0 then return 0 end
redis.call('HSET', p .. 'eng', id, ARGV[3])
if ARGV[4] == '' then redis.call('HDEL', p .. 'wait', id) else redis.call('HSET', p .. 'wait', id, ARGV[4]) end
if ARGV[5] == '1' then redis.call('HSET', p .. 'sat', id, 1) else redis.call('HDEL', p .. 'sat', id) end
reindex(p, id, judged_at(p, now_ms()))
return 1
`;

/** ARGV: prefix, id. Out of selection at once. Returns 0 when unknown, 1 when it was alive, 2 when it was not. */
export const MARK_DOWN = `${NOW}${INDEX}
local p, id = ARGV[1], ARGV[2]
if redis.call('HEXISTS', p .. 'rec', id) == 0 then return 0 end
local was = alive_at(p, id, judged_at(p, now_ms()))
redis.call('HSET', p .. 'down', id, 1)
redis.call('ZREM', p .. 'live', id)
place(p, id, false)
if was then return 1 end
return 2
`;

/** ARGV: prefix. Ids whose expiry passed since the last sweep; each leaves the watch list (and selection), so it is reported once. */
export const SWEEP_LIVENESS = `${NOW}${INDEX}
local p = ARGV[1]
local at = judged_at(p, now_ms())
local lapsed = redis.call('ZRANGEBYSCORE', p .. 'live', '-inf', '(' .. at)
for _, id in ipairs(lapsed) do
  redis.call('ZREM', p .. 'live', id)
  place(p, id, false)
end
return lapsed
`;

/**
 * ARGV: prefix, replica id, ttl_ms. Returns 1 while this replica holds the control plane's lease.
 * \`until\` never expires as a key, so the moment it lapsed stays readable. A claim after a lapse moves
 * every expiry on by the gap: time with no control plane counts against no one (O(instances), rare).
 * Who is in the selection index does not change: alive at the lapse is alive after the move.
 */
export const CLAIM_CONTROL_PLANE = `${NOW}
local p, replica = ARGV[1], ARGV[2]
local now = now_ms()
local holder = redis.call('HGET', p .. 'cp', 'holder')
local u = tonumber(redis.call('HGET', p .. 'cp', 'until') or '')
if holder and holder ~= replica and u and u >= now then return 0 end
if u and u < now then
  local gap = math.max(0, now - tonumber(redis.call('HGET', p .. 'cp', 'watch') or u))
  local flat = redis.call('HGETALL', p .. 'exp')
  for i = 1, #flat, 2 do
    local e = tonumber(flat[i + 1]) + gap
    redis.call('HSET', p .. 'exp', flat[i], e)
    if redis.call('ZSCORE', p .. 'live', flat[i]) then redis.call('ZADD', p .. 'live', e, flat[i]) end
  end
end
redis.call('HSET', p .. 'cp', 'holder', replica, 'until', now + tonumber(ARGV[3]), 'watch', now + tonumber(ARGV[4]))
return 1
`;

/** ARGV: prefix, id. Returns 0 when unknown. Drops every proxy's contribution to the instance. */
export const REMOVE = `${NOW}${INDEX}
local p, id = ARGV[1], ARGV[2]
local models = redis.call('HGET', p .. 'models', id)
if not models then return 0 end
place(p, id, false)
for _, m in ipairs(cjson.decode(models)) do redis.call('SREM', p .. 'model:' .. m, id) end
for _, h in ipairs({'rec', 'url', 'w', 'max', 'ttl', 'models', 'seen', 'exp', 'qps', 'gpu', 'reg', 'inflight', 'eng', 'wait', 'sat', 'down', 'ixs'}) do
  redis.call('HDEL', p .. h, id)
end
redis.call('DEL', p .. 'im:' .. id)
redis.call('ZREM', p .. 'live', id)
for _, proxy in ipairs(redis.call('ZRANGE', p .. 'leases', 0, -1)) do
  redis.call('HDEL', p .. 'contrib:' .. proxy, id)
end
redis.call('INCR', p .. 'ver')
return 1
`;

/**
 * Select-and-acquire in one step, O(log N) in the instances of the model (O(k log N) with k excluded).
 * ARGV: prefix, model, strategy, proxy, rand1, rand2, excluded ids...
 * Returns {1, id, url, inflight} or {code}: 0 unknown model, -1 none alive, -2 all full.
 * The pick is libs/routing pick() over the alive instances; the store contract suite holds both to the same picks.
 */
export const ACQUIRE = `${NOW}${INDEX}
local p, model, strategy, proxy = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ld, ix = p .. 'ld:' .. model, p .. 'ix:' .. model
local now = now_ms()
local at = judged_at(p, now)
local excluded, nex = {}, 0
for i = 7, #ARGV do
  if not excluded[ARGV[i]] then nex = nex + 1 end
  excluded[ARGV[i]] = true
end

local function after(s)
  local i = #s
  while string.byte(s, i) == 255 do i = i - 1 end
  return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1)
end
-- The k-th (0-based) member of key among the run of members starting with run, skipping excluded
-- ids (whose members are member_of(id)); nil when the run holds no one else. Ranks, so O(log N) each.
local function kth(key, run, k_of, member_of)
  local total = redis.call('ZLEXCOUNT', key, '[' .. run, '(' .. after(run))
  local r0 = redis.call('ZLEXCOUNT', key, '-', '(' .. run)
  local skips = {}
  if nex > 0 then
    for id, _ in pairs(excluded) do
      local mem = member_of(id)
      if mem and string.sub(mem, 1, #run) == run then
        local r = redis.call('ZRANK', key, mem)
        if r then skips[#skips + 1] = r end
      end
    end
    table.sort(skips)
  end
  local n = total - #skips
  if n <= 0 then return nil, 0 end
  local target = r0 + k_of(n)
  for _, r in ipairs(skips) do if r <= target then target = target + 1 end end
  return redis.call('ZRANGE', key, target, target)[1], n
end
local function ld_member(id)
  local s = redis.call('HGET', p .. 'ixs', id)
  if s and s ~= 'F' then return s .. id end
  return nil
end
local function ix_member(id)
  local s = redis.call('HGET', p .. 'ixs', id)
  if s and s ~= 'F' then return string.sub(s, 1, 1) .. id end
  return nil
end
-- Lazily drops an instance whose ttl lapsed (the sweep reports it); true when it may be picked.
local function fresh(id)
  local e = tonumber(redis.call('HGET', p .. 'exp', id) or '')
  if e and e >= at then return true end
  place(p, id, false)
  return false
end
local function load_of(id)
  return (tonumber(redis.call('HGET', p .. 'inflight', id) or '0') or 0) / (tonumber(redis.call('HGET', p .. 'w', id) or '1') or 1)
end
-- The saturation guard: the unsaturated run ('0') when it has anyone left, else the saturated one ('1').
local function ix_pick(k_of)
  local m, n = kth(ix, '0', k_of, ix_member)
  if not m then m, n = kth(ix, '1', k_of, ix_member) end
  return m, n
end

local ticket = redis.call('HINCRBY', p .. 'rr', model, 1) - 1
local chosen
while not chosen do
  if strategy == 'least_load' then
    local first
    for _, m in ipairs(redis.call('ZRANGE', ld, 0, nex)) do
      if not excluded[string.sub(m, 26)] then
        first = m
        break
      end
    end
    if not first then break end
    local m = kth(ld, string.sub(first, 1, 25), function(n) return ticket % n end, ld_member)
    local id = string.sub(m, 26)
    if fresh(id) then chosen = id end
  elseif strategy == 'power_of_two' then
    local m, n = ix_pick(function(n) return math.floor(tonumber(ARGV[5]) * n) end)
    if not m then break end
    local ida = string.sub(m, 2)
    if n == 1 then
      if fresh(ida) then chosen = ida end
    else
      local ia = math.floor(tonumber(ARGV[5]) * n)
      local mb = kth(ix, string.sub(m, 1, 1), function(k)
        local b = math.floor(tonumber(ARGV[6]) * (k - 1))
        if b >= ia then b = b + 1 end
        return b
      end, ix_member)
      local idb = string.sub(mb, 2)
      local fa, fb = fresh(ida), fresh(idb)
      if fa and fb then
        chosen = ida
        if load_of(idb) < load_of(ida) then chosen = idb end
      end
    end
  else
    local m = ix_pick(function(n)
      if strategy == 'random' then return math.floor(tonumber(ARGV[5]) * n) end
      return ticket % n
    end)
    if not m then break end
    local id = string.sub(m, 2)
    if fresh(id) then chosen = id end
  end
end

if not chosen then
  if redis.call('EXISTS', p .. 'model:' .. model) == 0 then return {0} end
  -- all_full when an alive, not excluded instance of the model is only full; else none alive.
  for _, id in ipairs(redis.call('SMEMBERS', p .. 'fl:' .. model)) do
    if not excluded[id] and fresh(id) then return {-2} end
  end
  return {-1}
end
local count = redis.call('HINCRBY', p .. 'inflight', chosen, 1)
place(p, chosen, moved(p, chosen, redis.call('HGET', p .. 'ixs', chosen), count))
redis.call('HINCRBY', p .. 'contrib:' .. proxy, chosen, 1)
redis.call('ZADD', p .. 'leases', 'NX', now, proxy)
return {1, chosen, redis.call('HGET', p .. 'url', chosen), count}
`;

/** ARGV: prefix, proxy, id. Returns the new count, or -1 when this proxy held no slot there. Publishes the id on `freed` when it leaves max_inflight. */
export const RELEASE = `${NOW}${INDEX}
local p, proxy, id = ARGV[1], ARGV[2], ARGV[3]
local key = p .. 'contrib:' .. proxy
local held = tonumber(redis.call('HGET', key, id) or '0')
if held <= 0 then return -1 end
if held == 1 then redis.call('HDEL', key, id) else redis.call('HINCRBY', key, id, -1) end
if redis.call('HEXISTS', p .. 'rec', id) == 0 then return -1 end
local count = redis.call('HINCRBY', p .. 'inflight', id, -1)
if count < 0 then
  redis.call('HSET', p .. 'inflight', id, 0)
  count = 0
end
local old = redis.call('HGET', p .. 'ixs', id)
if old then
  local new = moved(p, id, old, count)
  if new == nil then new = desired(p, id, judged_at(p, now_ms())) end
  place(p, id, new)
end
-- An instance just dropped below its max_inflight: proxies with queued requests hear it.
local mx = redis.call('HGET', p .. 'max', id)
if mx and count == tonumber(mx) - 1 then redis.call('PUBLISH', p .. 'freed', id) end
return count
`;

/** Takes a proxy's contributions out of the counts (and the index); needs INDEX and judged_at's \`at\`. */
const SUBTRACT = `
local function subtract(p, proxy, at)
  local key = p .. 'contrib:' .. proxy
  local flat = redis.call('HGETALL', key)
  for i = 1, #flat, 2 do
    local id = flat[i]
    if redis.call('HEXISTS', p .. 'rec', id) == 1 then
      local count = redis.call('HINCRBY', p .. 'inflight', id, -tonumber(flat[i + 1]))
      if count < 0 then redis.call('HSET', p .. 'inflight', id, 0) end
      reindex(p, id, at)
    end
  end
  redis.call('DEL', key)
end
`;

/** ARGV: prefix, proxy, counts JSON {id: n}. Rewrites the proxy's contributions from its local truth. */
export const RECONCILE = `${NOW}${INDEX}
local p, proxy = ARGV[1], ARGV[2]
local key = p .. 'contrib:' .. proxy
local want = cjson.decode(ARGV[3])
local have = {}
local flat = redis.call('HGETALL', key)
for i = 1, #flat, 2 do have[flat[i]] = tonumber(flat[i + 1]) end
for id, _ in pairs(want) do if have[id] == nil then have[id] = 0 end end
redis.call('DEL', key)
local now = now_ms()
local at = judged_at(p, now)
for id, old in pairs(have) do
  if redis.call('HEXISTS', p .. 'rec', id) == 1 then
    local new = math.max(0, math.floor(tonumber(want[id]) or 0))
    if new ~= old then
      local count = redis.call('HINCRBY', p .. 'inflight', id, new - old)
      if count < 0 then redis.call('HSET', p .. 'inflight', id, 0) end
      reindex(p, id, at)
    end
    if new > 0 then redis.call('HSET', key, id, new) end
  end
end
redis.call('ZADD', p .. 'leases', 'NX', now, proxy)
return 1
`;

/** ARGV: prefix, proxy, ttl_ms, info JSON. Returns 1 when a control plane holds its lease (or none ever claimed one), 0 when it lapsed. */
export const RENEW_LEASE = `${NOW}
local p, proxy = ARGV[1], ARGV[2]
local now = now_ms()
redis.call('ZADD', p .. 'leases', now + tonumber(ARGV[3]), proxy)
redis.call('HSET', p .. 'lease_info', proxy, ARGV[4])
redis.call('HSET', p .. 'lease_seen', proxy, now)
local u = tonumber(redis.call('HGET', p .. 'cp', 'until') or '')
if u and u < now then return 0 end
return 1
`;

/** ARGV: prefix, proxy. */
export const DROP_LEASE = `${NOW}${INDEX}${SUBTRACT}
local p, proxy = ARGV[1], ARGV[2]
subtract(p, proxy, judged_at(p, now_ms()))
redis.call('ZREM', p .. 'leases', proxy)
redis.call('HDEL', p .. 'lease_info', proxy)
redis.call('HDEL', p .. 'lease_seen', proxy)
return 1
`;

/** ARGV: prefix. Returns the reaped proxy ids. */
export const REAP = `${NOW}${INDEX}${SUBTRACT}
local p = ARGV[1]
local now = now_ms()
local at = judged_at(p, now)
local expired = redis.call('ZRANGEBYSCORE', p .. 'leases', '-inf', '(' .. now)
for _, proxy in ipairs(expired) do
  subtract(p, proxy, at)
  redis.call('ZREM', p .. 'leases', proxy)
  redis.call('HDEL', p .. 'lease_info', proxy)
  redis.call('HDEL', p .. 'lease_seen', proxy)
end
return expired
`;

/** Per-instance hashes the reads return, in this order. */
export const INSTANCE_FIELDS = ['reg', 'seen', 'exp', 'down', 'qps', 'gpu', 'inflight', 'eng', 'sat'] as const;
const FIELD_LIST = `{${INSTANCE_FIELDS.map((f) => `'${f}'`).join(', ')}}`;

/**
 * ARGV: prefix. One consistent read of the whole pool:
 * {now, ver, cp_watch|false, rec, ...INSTANCE_FIELDS hashes, leases, lease_info, lease_seen, {proxy, contrib}...}.
 */
export const DUMP = `${NOW}
local p = ARGV[1]
local out = { now_ms(), tonumber(redis.call('GET', p .. 'ver') or '0'), redis.call('HGET', p .. 'cp', 'watch'), redis.call('HGETALL', p .. 'rec') }
for _, h in ipairs(${FIELD_LIST}) do
  out[#out + 1] = redis.call('HGETALL', p .. h)
end
local leases = redis.call('ZRANGE', p .. 'leases', 0, -1, 'WITHSCORES')
out[#out + 1] = leases
out[#out + 1] = redis.call('HGETALL', p .. 'lease_info')
out[#out + 1] = redis.call('HGETALL', p .. 'lease_seen')
for i = 1, #leases, 2 do
  out[#out + 1] = { leases[i], redis.call('HGETALL', p .. 'contrib:' .. leases[i]) }
end
return out
`;

/**
 * ARGV: prefix, id. One instance read at one moment, without the rest of the pool:
 * {now, cp_watch, rec, ...INSTANCE_FIELDS, {proxy, n, ...}} (false where never written), or nil when unknown.
 */
export const INSTANCE = `${NOW}
local p, id = ARGV[1], ARGV[2]
local rec = redis.call('HGET', p .. 'rec', id)
if not rec then return false end
local out = { now_ms(), redis.call('HGET', p .. 'cp', 'watch'), rec }
for _, h in ipairs(${FIELD_LIST}) do
  out[#out + 1] = redis.call('HGET', p .. h, id)
end
local by = {}
for _, proxy in ipairs(redis.call('ZRANGE', p .. 'leases', 0, -1)) do
  local n = redis.call('HGET', p .. 'contrib:' .. proxy, id)
  if n then
    by[#by + 1] = proxy
    by[#by + 1] = n
  end
end
out[#out + 1] = by
return out
`;

/** ARGV: prefix. Returns 1 when the registry marker was missing (a new or emptied store) and is now written. */
export const ENSURE_MARKER = `
local p = ARGV[1]
if redis.call('SET', p .. 'marker', '1', 'NX') then return 1 end
return 0
`;
