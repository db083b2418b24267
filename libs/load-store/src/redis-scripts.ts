/**
 * Lua scripts of RedisLoadStore. Every key of a pool shares one hash tag
 * (`sy:{pool}:…`), so a script touches one slot; KEYS[1] names the pool's
 * registry hash for routing, the rest are built from the prefix in ARGV[1].
 * Times come from Redis TIME, so every proxy and the control plane share one clock.
 */

const NOW = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * Lua's string < is strcoll, and redis-server takes LC_COLLATE from its environment
 * (under en_US.UTF-8, 'a' < 'B'); compare bytes so the order is libs/routing's on every host.
 */
const BYTEWISE = `
local function bytewise(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
`;

/**
 * Liveness is judged at the moment the control plane's lease lapsed, when one was written and has:
 * stopping every control plane then expires no one, and proxies keep routing on the last liveness.
 */
const JUDGED_AT = `
local function judged_at(p, now)
  local u = tonumber(redis.call('HGET', p .. 'cp', 'until') or '')
  if u and u < now then return u end
  return now
end
local function alive_at(p, id, at)
  if redis.call('HEXISTS', p .. 'down', id) == 1 then return false end
  local e = tonumber(redis.call('HGET', p .. 'exp', id) or '')
  return e ~= nil and e >= at
end
`;

/** ARGV: prefix, id, record JSON, url, weight, max_inflight ('' = none), ttl_ms, models JSON. Returns 1 when created. */
export const REGISTER = `${NOW}
local p, id = ARGV[1], ARGV[2]
local now = now_ms()
local created = 0
local old = redis.call('HGET', p .. 'models', id)
if old then
  for _, m in ipairs(cjson.decode(old)) do redis.call('SREM', p .. 'model:' .. m, id) end
else
  created = 1
  redis.call('HSET', p .. 'reg', id, now)
  redis.call('HSET', p .. 'inflight', id, 0)
end
redis.call('HSET', p .. 'rec', id, ARGV[3])
redis.call('HSET', p .. 'url', id, ARGV[4])
redis.call('HSET', p .. 'w', id, ARGV[5])
if ARGV[6] == '' then redis.call('HDEL', p .. 'max', id) else redis.call('HSET', p .. 'max', id, ARGV[6]) end
redis.call('HSET', p .. 'ttl', id, ARGV[7])
redis.call('HSET', p .. 'models', id, ARGV[8])
for _, m in ipairs(cjson.decode(ARGV[8])) do redis.call('SADD', p .. 'model:' .. m, id) end
redis.call('HSET', p .. 'seen', id, now)
redis.call('HSET', p .. 'exp', id, now + tonumber(ARGV[7]))
redis.call('HDEL', p .. 'down', id)
redis.call('ZADD', p .. 'live', now + tonumber(ARGV[7]), id)
redis.call('INCR', p .. 'ver')
return created
`;

/**
 * A heartbeat or a successful probe. ARGV: prefix, id, qps_1m ('' = not given), gpu_util ('' = not given).
 * Returns 0 when unknown, 1 when it was alive, 2 when this beat revived it.
 */
export const HEARTBEAT = `${NOW}${JUDGED_AT}
local p, id = ARGV[1], ARGV[2]
local ttl = redis.call('HGET', p .. 'ttl', id)
if not ttl then return 0 end
local now = now_ms()
local was = alive_at(p, id, judged_at(p, now))
redis.call('HSET', p .. 'seen', id, now)
redis.call('HSET', p .. 'exp', id, now + tonumber(ttl))
redis.call('HDEL', p .. 'down', id)
redis.call('ZADD', p .. 'live', now + tonumber(ttl), id)
if ARGV[3] ~= '' then redis.call('HSET', p .. 'qps', id, ARGV[3]) end
if ARGV[4] ~= '' then redis.call('HSET', p .. 'gpu', id, ARGV[4]) end
if was then return 1 end
return 2
`;

/**
 * ARGV: prefix, id, signals JSON (stored for reads only, never decoded here), waiting ('' = unknown), saturated (1/0).
 * Returns 0 when unknown. Selection reads waiting and saturated as plain numbers.
 */
export const REPORT_ENGINE = `
local p, id = ARGV[1], ARGV[2]
if redis.call('HEXISTS', p .. 'rec', id) == 0 then return 0 end
redis.call('HSET', p .. 'eng', id, ARGV[3])
if ARGV[4] == '' then redis.call('HDEL', p .. 'wait', id) else redis.call('HSET', p .. 'wait', id, ARGV[4]) end
if ARGV[5] == '1' then redis.call('HSET', p .. 'sat', id, 1) else redis.call('HDEL', p .. 'sat', id) end
return 1
`;

/** ARGV: prefix, id. Out of selection at once. Returns 0 when unknown, 1 when it was alive, 2 when it was not. */
export const MARK_DOWN = `${NOW}${JUDGED_AT}
local p, id = ARGV[1], ARGV[2]
if redis.call('HEXISTS', p .. 'rec', id) == 0 then return 0 end
local was = alive_at(p, id, judged_at(p, now_ms()))
redis.call('HSET', p .. 'down', id, 1)
redis.call('ZREM', p .. 'live', id)
if was then return 1 end
return 2
`;

/** ARGV: prefix. Ids whose expiry passed since the last sweep; each leaves the watch list, so it is reported once. */
export const SWEEP_LIVENESS = `${NOW}${JUDGED_AT}
local p = ARGV[1]
local at = judged_at(p, now_ms())
local lapsed = redis.call('ZRANGEBYSCORE', p .. 'live', '-inf', '(' .. at)
for _, id in ipairs(lapsed) do redis.call('ZREM', p .. 'live', id) end
return lapsed
`;

/**
 * ARGV: prefix, replica id, ttl_ms. Returns 1 while this replica holds the control plane's lease.
 * \`until\` never expires as a key, so the moment it lapsed stays readable. A claim after a lapse moves
 * every expiry on by the gap: time with no control plane counts against no one (O(instances), rare).
 */
export const CLAIM_CONTROL_PLANE = `${NOW}
local p, replica = ARGV[1], ARGV[2]
local now = now_ms()
local holder = redis.call('HGET', p .. 'cp', 'holder')
local u = tonumber(redis.call('HGET', p .. 'cp', 'until') or '')
if holder and holder ~= replica and u and u >= now then return 0 end
if u and u < now then
  local gap = now - u
  local flat = redis.call('HGETALL', p .. 'exp')
  for i = 1, #flat, 2 do
    local e = tonumber(flat[i + 1]) + gap
    redis.call('HSET', p .. 'exp', flat[i], e)
    if redis.call('ZSCORE', p .. 'live', flat[i]) then redis.call('ZADD', p .. 'live', e, flat[i]) end
  end
end
redis.call('HSET', p .. 'cp', 'holder', replica, 'until', now + tonumber(ARGV[3]))
return 1
`;

/** ARGV: prefix, id. Returns 0 when unknown. Drops every proxy's contribution to the instance. */
export const REMOVE = `
local p, id = ARGV[1], ARGV[2]
local models = redis.call('HGET', p .. 'models', id)
if not models then return 0 end
for _, m in ipairs(cjson.decode(models)) do redis.call('SREM', p .. 'model:' .. m, id) end
for _, h in ipairs({'rec', 'url', 'w', 'max', 'ttl', 'models', 'seen', 'exp', 'qps', 'gpu', 'reg', 'inflight', 'eng', 'wait', 'sat', 'down'}) do
  redis.call('HDEL', p .. h, id)
end
redis.call('ZREM', p .. 'live', id)
for _, proxy in ipairs(redis.call('ZRANGE', p .. 'leases', 0, -1)) do
  redis.call('HDEL', p .. 'contrib:' .. proxy, id)
end
redis.call('INCR', p .. 'ver')
return 1
`;

/**
 * Select-and-acquire in one step. ARGV: prefix, model, strategy, proxy, rand1, rand2, excluded ids...
 * Returns {1, id, url, inflight} or {code}: 0 unknown model, -1 none alive, -2 all full.
 * The pick mirrors libs/routing pick(); the store contract suite holds both to the same cases.
 */
export const ACQUIRE = `${NOW}${BYTEWISE}${JUDGED_AT}
local p, model, strategy, proxy = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ids = redis.call('SMEMBERS', p .. 'model:' .. model)
if #ids == 0 then return {0} end
local excluded = {}
for i = 7, #ARGV do excluded[ARGV[i]] = true end
table.sort(ids, bytewise)
local now = now_ms()
local at = judged_at(p, now)
local inf = redis.call('HMGET', p .. 'inflight', unpack(ids))
local exp = redis.call('HMGET', p .. 'exp', unpack(ids))
local down = redis.call('HMGET', p .. 'down', unpack(ids))
local qps = redis.call('HMGET', p .. 'qps', unpack(ids))
local wait = redis.call('HMGET', p .. 'wait', unpack(ids))
local sat = redis.call('HMGET', p .. 'sat', unpack(ids))
local w = redis.call('HMGET', p .. 'w', unpack(ids))
local mx = redis.call('HMGET', p .. 'max', unpack(ids))
local hot, cool = {}, {}
local alive = 0
for i, id in ipairs(ids) do
  if not excluded[id] and not down[i] and exp[i] and tonumber(exp[i]) >= at then
    alive = alive + 1
    local n = tonumber(inf[i]) or 0
    if not mx[i] or n < tonumber(mx[i]) then
      local weight = tonumber(w[i]) or 1
      local q = math.max(tonumber(qps[i]) or 0, 0)
      local c = { id = id, s = n / weight, wt = math.max(tonumber(wait[i]) or 0, 0), q = q / weight }
      if sat[i] then hot[#hot + 1] = c else cool[#cool + 1] = c end
    end
  end
end
if alive == 0 then return {-1} end
-- Saturation guard: saturated instances only when every one with room is saturated.
local open = cool
if #open == 0 then open = hot end
if #open == 0 then return {-2} end
local ticket = redis.call('HINCRBY', p .. 'rr', model, 1) - 1
local n = #open
local chosen
if strategy == 'round_robin' then
  chosen = open[(ticket % n) + 1]
elseif strategy == 'random' then
  chosen = open[math.floor(tonumber(ARGV[5]) * n) + 1]
elseif strategy == 'power_of_two' then
  if n == 1 then
    chosen = open[1]
  else
    local a = math.floor(tonumber(ARGV[5]) * n)
    local b = math.floor(tonumber(ARGV[6]) * (n - 1))
    if b >= a then b = b + 1 end
    chosen = open[a + 1]
    if open[b + 1].s < chosen.s then chosen = open[b + 1] end
  end
else
  local best, ties = nil, {}
  for _, c in ipairs(open) do
    local better = best == nil or c.s < best.s or (c.s == best.s and (c.wt < best.wt or (c.wt == best.wt and c.q < best.q)))
    if better then
      best, ties = c, { c }
    elseif c.s == best.s and c.wt == best.wt and c.q == best.q then
      ties[#ties + 1] = c
    end
  end
  chosen = ties[(ticket % #ties) + 1]
end
local count = redis.call('HINCRBY', p .. 'inflight', chosen.id, 1)
redis.call('HINCRBY', p .. 'contrib:' .. proxy, chosen.id, 1)
redis.call('ZADD', p .. 'leases', 'NX', now, proxy)
return {1, chosen.id, redis.call('HGET', p .. 'url', chosen.id), count}
`;

/** ARGV: prefix, proxy, id. Returns the new count, or -1 when this proxy held no slot there. Publishes the id on `freed` when it leaves max_inflight. */
export const RELEASE = `
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
-- An instance just dropped below its max_inflight: proxies with queued requests hear it.
local mx = redis.call('HGET', p .. 'max', id)
if mx and count == tonumber(mx) - 1 then redis.call('PUBLISH', p .. 'freed', id) end
return count
`;

const SUBTRACT = `
local function subtract(p, proxy)
  local key = p .. 'contrib:' .. proxy
  local flat = redis.call('HGETALL', key)
  for i = 1, #flat, 2 do
    local id = flat[i]
    if redis.call('HEXISTS', p .. 'rec', id) == 1 then
      local count = redis.call('HINCRBY', p .. 'inflight', id, -tonumber(flat[i + 1]))
      if count < 0 then redis.call('HSET', p .. 'inflight', id, 0) end
    end
  end
  redis.call('DEL', key)
end
`;

/** ARGV: prefix, proxy, counts JSON {id: n}. Rewrites the proxy's contributions from its local truth. */
export const RECONCILE = `${NOW}
local p, proxy = ARGV[1], ARGV[2]
local key = p .. 'contrib:' .. proxy
local want = cjson.decode(ARGV[3])
local have = {}
local flat = redis.call('HGETALL', key)
for i = 1, #flat, 2 do have[flat[i]] = tonumber(flat[i + 1]) end
for id, _ in pairs(want) do if have[id] == nil then have[id] = 0 end end
redis.call('DEL', key)
for id, old in pairs(have) do
  if redis.call('HEXISTS', p .. 'rec', id) == 1 then
    local new = math.max(0, math.floor(tonumber(want[id]) or 0))
    if new ~= old then
      local count = redis.call('HINCRBY', p .. 'inflight', id, new - old)
      if count < 0 then redis.call('HSET', p .. 'inflight', id, 0) end
    end
    if new > 0 then redis.call('HSET', key, id, new) end
  end
end
redis.call('ZADD', p .. 'leases', 'NX', now_ms(), proxy)
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
export const DROP_LEASE = `${SUBTRACT}
local p, proxy = ARGV[1], ARGV[2]
subtract(p, proxy)
redis.call('ZREM', p .. 'leases', proxy)
redis.call('HDEL', p .. 'lease_info', proxy)
redis.call('HDEL', p .. 'lease_seen', proxy)
return 1
`;

/** ARGV: prefix. Returns the reaped proxy ids. */
export const REAP = `${NOW}${SUBTRACT}
local p = ARGV[1]
local expired = redis.call('ZRANGEBYSCORE', p .. 'leases', '-inf', '(' .. now_ms())
for _, proxy in ipairs(expired) do
  subtract(p, proxy)
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
 * {now, ver, cp_until|false, rec, ...INSTANCE_FIELDS hashes, leases, lease_info, lease_seen, {proxy, contrib}...}.
 */
export const DUMP = `${NOW}
local p = ARGV[1]
local out = { now_ms(), tonumber(redis.call('GET', p .. 'ver') or '0'), redis.call('HGET', p .. 'cp', 'until'), redis.call('HGETALL', p .. 'rec') }
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
 * {now, cp_until, rec, ...INSTANCE_FIELDS, {proxy, n, ...}} (false where never written), or nil when unknown.
 */
export const INSTANCE = `${NOW}
local p, id = ARGV[1], ARGV[2]
local rec = redis.call('HGET', p .. 'rec', id)
if not rec then return false end
local out = { now_ms(), redis.call('HGET', p .. 'cp', 'until'), rec }
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
