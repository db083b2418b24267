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
 * Instances at max_inflight wait in the set `fl:<model>`. An instance whose ttl lapsed leaves
 * the sets when the control plane sweeps, or lazily when a selection lands on it.
 * `hot` packs, per instance, everything the request path needs into one value (see HOT), so an
 * acquire and a release each read one field per instance; the other hashes serve the reads.
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

/**
 * What the request path needs: reading an instance's hot field, its ld prefix, and moving it in
 * the sets. The hot field holds the instance's request-path fields in one value:
 * pack('>ddd', weight, max_inflight or -1, expiry ms) .. sat ('0'/'1') .. pack('>dd', waiting, qps_1m / weight)
 * .. pack('>H', #url) .. url .. (pack('>H', #model) .. model)...
 * Bytes 25..41 are the tail of the instance's ld member; its load part is computed from in-flight.
 */
const HOT = `
local function num(x)
  -- -0 and NaN would break the byte order of packed doubles.
  if x ~= x or x <= 0 then return 0 end
  return x
end
local function hot_of(p, id)
  local raw = redis.call('HGET', p .. 'hot', id)
  if not raw then return nil end
  local w, mx, exp = struct.unpack('>ddd', raw)
  local waiting, qps = struct.unpack('>dd', raw, 26)
  local h = { w = w, exp = exp, sat = string.sub(raw, 25, 25), waiting = waiting, qps = qps, tail = string.sub(raw, 26, 41), models = {} }
  if mx >= 0 then h.max = mx end
  local ulen, pos = struct.unpack('>H', raw, 42)
  h.url = string.sub(raw, pos, pos + ulen - 1)
  pos = pos + ulen
  while pos <= #raw do
    local len, from = struct.unpack('>H', raw, pos)
    h.models[#h.models + 1] = string.sub(raw, from, from + len - 1)
    pos = from + len
  end
  return h
end
local function prefix_at(h, n)
  return h.sat .. struct.pack('>d', num(n / h.w)) .. h.tail
end
-- Moves an instance from old to new ('F', an ld prefix, or false: out) in the sets of each of its models.
local function place(p, id, h, old, new)
  if old == new then return end
  local same_ix = old and new and old ~= 'F' and new ~= 'F' and string.sub(old, 1, 1) == string.sub(new, 1, 1)
  for _, m in ipairs(h.models) do
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
end
`;

/**
 * Writes an instance's hot field. Kept apart from HOT: the request path only reads it, and every
 * function a script defines is built again on each call.
 */
const HOT_WRITE = `
local function put_hot(p, id, h)
  local parts = { struct.pack('>ddd', h.w, h.max or -1, h.exp), h.sat, struct.pack('>dd', num(h.waiting), num(h.qps)), struct.pack('>H', #h.url), h.url }
  for _, m in ipairs(h.models) do parts[#parts + 1] = struct.pack('>H', #m) .. m end
  redis.call('HSET', p .. 'hot', id, table.concat(parts))
end
`;

/** A liveness or engine change proxies should hear about at their next registry sync (see SYNC). */
const CHANGED = `
local function changed(p, id)
  redis.call('ZADD', p .. 'chg', redis.call('INCR', p .. 'chgseq'), id)
end
`;

/** Where an instance is in the selection index (see the header) and where it belongs. */
const LOCATE = `
local function inflight_of(p, id)
  return tonumber(redis.call('HGET', p .. 'inflight', id) or '0') or 0
end
-- 'F' (full), the ld prefix, or false (not alive: out of selection) for n in flight.
local function desired(p, id, h, n, at)
  if redis.call('HEXISTS', p .. 'down', id) == 1 or h.exp < at then return false end
  if h.max and n >= h.max then return 'F' end
  return prefix_at(h, n)
end
-- Where it is now, given the fields its place was computed from: in one model's sets is in all.
local function located(p, id, h, n)
  local m = h.models[1]
  if not m then return false end
  local pre = prefix_at(h, n)
  if redis.call('ZSCORE', p .. 'ld:' .. m, pre .. id) then return pre end
  if redis.call('SISMEMBER', p .. 'fl:' .. m, id) == 1 then return 'F' end
  return false
end
-- Out of selection (marked down, ttl lapsed, removed, re-registered).
local function unplace(p, id)
  local h = hot_of(p, id)
  if h then place(p, id, h, located(p, id, h, inflight_of(p, id)), false) end
end
-- A change to h (engine signals, qps, expiry) or to in-flight (from n_before to n_after): moves it.
local function replace(p, id, old_h, new_h, n_before, n_after, at)
  place(p, id, new_h, located(p, id, old_h, n_before), desired(p, id, new_h, n_after, at))
end
`;

/** Everything a script that changes an instance's state may need. */
const INDEX = `${JUDGED_AT}${HOT}${HOT_WRITE}${CHANGED}${LOCATE}`;

/** ARGV: prefix, id, record JSON, url, weight, max_inflight ('' = none), ttl_ms, models JSON. Returns 1 when created. */
export const REGISTER = `${NOW}${INDEX}
local p, id = ARGV[1], ARGV[2]
local now = now_ms()
local created = 0
unplace(p, id)
local old = redis.call('HGET', p .. 'models', id)
if old then
  for _, m in ipairs(cjson.decode(old)) do redis.call('SREM', p .. 'model:' .. m, id) end
else
  created = 1
  redis.call('HSET', p .. 'reg', id, now)
  redis.call('HSET', p .. 'inflight', id, 0)
end
local h = hot_of(p, id) or { sat = '0', waiting = 0, qps = 0 }
local qps = tonumber(redis.call('HGET', p .. 'qps', id) or '0') or 0
h.w, h.max, h.exp, h.url, h.models = tonumber(ARGV[5]), tonumber(ARGV[6]), now + tonumber(ARGV[7]), ARGV[4], cjson.decode(ARGV[8])
h.qps = num(qps) / h.w
put_hot(p, id, h)
h = hot_of(p, id)
redis.call('HSET', p .. 'rec', id, ARGV[3])
redis.call('HSET', p .. 'ttl', id, ARGV[7])
redis.call('HSET', p .. 'models', id, ARGV[8])
for _, m in ipairs(h.models) do redis.call('SADD', p .. 'model:' .. m, id) end
redis.call('HSET', p .. 'seen', id, now)
redis.call('HSET', p .. 'exp', id, h.exp)
redis.call('HDEL', p .. 'down', id)
redis.call('ZADD', p .. 'live', h.exp, id)
place(p, id, h, false, desired(p, id, h, inflight_of(p, id), judged_at(p, now)))
redis.call('INCR', p .. 'ver')
return created
`;

/**
 * A heartbeat or a successful probe. ARGV: prefix, id, qps_1m ('' = not given), gpu_util ('' = not given).
 * Returns 0 when unknown, 1 when it was alive, 2 when this beat revived it.
 */
export const HEARTBEAT = `${NOW}${INDEX}
local p, id = ARGV[1], ARGV[2]
local h = hot_of(p, id)
local ttl = redis.call('HGET', p .. 'ttl', id)
if not h or not ttl then return 0 end
local now = now_ms()
local at = judged_at(p, now)
local was = alive_at(p, id, at)
local n = inflight_of(p, id)
local old = located(p, id, h, n)
h.exp = now + tonumber(ttl)
redis.call('HSET', p .. 'seen', id, now)
redis.call('HSET', p .. 'exp', id, h.exp)
redis.call('HDEL', p .. 'down', id)
redis.call('ZADD', p .. 'live', h.exp, id)
if not was or (ARGV[3] ~= '' and ARGV[3] ~= redis.call('HGET', p .. 'qps', id)) then changed(p, id) end
if ARGV[3] ~= '' then
  redis.call('HSET', p .. 'qps', id, ARGV[3])
  h.qps = num(tonumber(ARGV[3]) or 0) / h.w
end
if ARGV[4] ~= '' then redis.call('HSET', p .. 'gpu', id, ARGV[4]) end
put_hot(p, id, h)
h = hot_of(p, id)
place(p, id, h, old, desired(p, id, h, n, at))
if was then return 1 end
return 2
`;

/**
 * ARGV: prefix, id, signals JSON (stored for reads only, never decoded here), waiting ('' = unknown), saturated (1/0).
 * Returns 0 when unknown. Selection reads waiting and saturated through the index, never as JSON.
 */
export const REPORT_ENGINE = `${NOW}${INDEX}
local p, id = ARGV[1], ARGV[2]
local h = hot_of(p, id)
if not h then return 0 end
local n = inflight_of(p, id)
local old = located(p, id, h, n)
if ARGV[4] ~= (redis.call('HGET', p .. 'wait', id) or '') or ARGV[5] ~= h.sat then changed(p, id) end
redis.call('HSET', p .. 'eng', id, ARGV[3])
if ARGV[4] == '' then redis.call('HDEL', p .. 'wait', id) else redis.call('HSET', p .. 'wait', id, ARGV[4]) end
if ARGV[5] == '1' then redis.call('HSET', p .. 'sat', id, 1) else redis.call('HDEL', p .. 'sat', id) end
h.waiting = tonumber(ARGV[4]) or 0
h.sat = '0'
if ARGV[5] == '1' then h.sat = '1' end
put_hot(p, id, h)
h = hot_of(p, id)
place(p, id, h, old, desired(p, id, h, n, judged_at(p, now_ms())))
return 1
`;

/** ARGV: prefix, id, expected record JSON, new record JSON. Replaces the record only if it is still the expected one; returns 1 then, else 0. */
export const UPDATE_RECORD = `
local p, id = ARGV[1], ARGV[2]
if redis.call('HGET', p .. 'rec', id) ~= ARGV[3] then return 0 end
redis.call('HSET', p .. 'rec', id, ARGV[4])
redis.call('INCR', p .. 'ver')
return 1
`;

/** ARGV: prefix, id. Out of selection at once. Returns 0 when unknown, 1 when it was alive, 2 when it was not. */
export const MARK_DOWN = `${NOW}${INDEX}
local p, id = ARGV[1], ARGV[2]
if redis.call('HEXISTS', p .. 'rec', id) == 0 then return 0 end
local was = alive_at(p, id, judged_at(p, now_ms()))
if was then changed(p, id) end
redis.call('HSET', p .. 'down', id, 1)
redis.call('ZREM', p .. 'live', id)
unplace(p, id)
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
  unplace(p, id)
  changed(p, id)
end
return lapsed
`;

/**
 * ARGV: prefix, replica id, ttl_ms, force ('1': write it whoever holds it; a pooled store's leader writes
 * every pool after winning its own claim). Returns 1 while this replica holds the control plane's lease.
 * \`until\` never expires as a key, so the moment it lapsed stays readable. A claim after a lapse moves
 * every expiry on by the gap: time with no control plane counts against no one (O(instances), rare).
 * Who is in the selection index does not change: alive at the lapse is alive after the move.
 */
export const CLAIM_CONTROL_PLANE = `${NOW}${HOT}${HOT_WRITE}
local p, replica = ARGV[1], ARGV[2]
local now = now_ms()
local holder = redis.call('HGET', p .. 'cp', 'holder')
local u = tonumber(redis.call('HGET', p .. 'cp', 'until') or '')
if ARGV[5] ~= '1' and holder and holder ~= replica and u and u >= now then return 0 end
if u and u < now then
  local gap = math.max(0, now - tonumber(redis.call('HGET', p .. 'cp', 'watch') or u))
  local flat = redis.call('HGETALL', p .. 'exp')
  for i = 1, #flat, 2 do
    local id, e = flat[i], tonumber(flat[i + 1]) + gap
    redis.call('HSET', p .. 'exp', id, e)
    if redis.call('ZSCORE', p .. 'live', id) then redis.call('ZADD', p .. 'live', e, id) end
    local h = hot_of(p, id)
    if h then
      h.exp = e
      put_hot(p, id, h)
    end
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
unplace(p, id)
for _, m in ipairs(cjson.decode(models)) do redis.call('SREM', p .. 'model:' .. m, id) end
for _, h in ipairs({'rec', 'hot', 'ttl', 'models', 'seen', 'exp', 'qps', 'gpu', 'reg', 'inflight', 'eng', 'wait', 'sat', 'down'}) do
  redis.call('HDEL', p .. h, id)
end
redis.call('ZREM', p .. 'live', id)
redis.call('ZREM', p .. 'chg', id)
for _, proxy in ipairs(redis.call('ZRANGE', p .. 'leases', 0, -1)) do
  redis.call('HDEL', p .. 'contrib:' .. proxy, id)
end
redis.call('INCR', p .. 'ver')
return 1
`;

/**
 * acquire(): the select-and-acquire of ACQUIRE and BATCH; `excluded` is a set of ids, `nex` its size;
 * `now` and `at` (when liveness is judged) are read once per script when not given.
 * Returns what ACQUIRE returns.
 */
const ACQUIRE_FN = `
local function acquire(p, model, strategy, proxy, rand1, rand2, akey, amode, attl, excluded, nex, now, at)
  local ld, ix = p .. 'ld:' .. model, p .. 'ix:' .. model
  if not now then
    now = now_ms()
    at = judged_at(p, now)
  end

  local function after(s)
    local i = #s
    while string.byte(s, i) == 255 do i = i - 1 end
    return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1)
  end
  -- The member of key at index k_of(n) (0-based) of the run of members starting with run, skipping
  -- excluded ids (whose members are member_of(id)), where n is how many the run holds besides them;
  -- nil when none. r0, the run's first rank, is counted when not known.
  -- Returns the member, n and the run's whole size. Ranks and lex counts: O(log N) each.
  local function kth(key, run, k_of, member_of, r0)
    local total = redis.call('ZLEXCOUNT', key, '[' .. run, '(' .. after(run))
    if not r0 then r0 = redis.call('ZLEXCOUNT', key, '-', '(' .. run) end
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
    if n <= 0 then return nil, 0, total end
    local target = r0 + k_of(n)
    for _, r in ipairs(skips) do if r <= target then target = target + 1 end end
    return redis.call('ZRANGE', key, target, target)[1], n, total
  end
  local function ld_member(id)
    local h = hot_of(p, id)
    if h then return prefix_at(h, inflight_of(p, id)) .. id end
    return nil
  end
  local function ix_member(id)
    local h = hot_of(p, id)
    if h then return h.sat .. id end
    return nil
  end
  -- Lazily drops an instance whose ttl lapsed (the sweep reports it); its fields when it may be picked.
  local function fresh(id)
    local h = hot_of(p, id)
    if h and h.exp >= at then return h end
    unplace(p, id)
    return nil
  end
  -- The saturation guard: the unsaturated run ('0', first in the set) when it has anyone left, else the saturated one ('1').
  local function ix_pick(k_of)
    local m, n, total = kth(ix, '0', k_of, ix_member, 0)
    if not m then m, n = kth(ix, '1', k_of, ix_member, total) end
    return m, n
  end

  local ticket = redis.call('HINCRBY', p .. 'rr', model, 1) - 1
  local chosen, h
  local aff = ''
  if akey ~= '' then
    local want = redis.call('GET', p .. 'aff:' .. akey)
    if want then
      aff = 'gone'
      local wh = not excluded[want] and redis.call('HEXISTS', p .. 'down', want) == 0 and fresh(want)
      local serves = false
      if wh then for _, m in ipairs(wh.models) do if m == model then serves = true end end end
      if serves then
        if not (wh.max and inflight_of(p, want) >= wh.max) then
          chosen, h, aff = want, wh, 'hit'
        elseif amode == 'hard' then
          return {-2}
        end
      end
    end
  end
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
      -- With nothing excluded the lowest member opens the run at rank 0.
      local r0
      if nex == 0 then r0 = 0 end
      local m = kth(ld, string.sub(first, 1, 25), function(n) return ticket % n end, ld_member, r0)
      local id = string.sub(m, 26)
      h = fresh(id)
      if h then chosen = id end
    elseif strategy == 'power_of_two' then
      local m, n = ix_pick(function(n) return math.floor(rand1 * n) end)
      if not m then break end
      local ida = string.sub(m, 2)
      if n == 1 then
        h = fresh(ida)
        if h then chosen = ida end
      else
        local ia = math.floor(rand1 * n)
        local mb = kth(ix, string.sub(m, 1, 1), function(k)
          local b = math.floor(rand2 * (k - 1))
          if b >= ia then b = b + 1 end
          return b
        end, ix_member, string.sub(m, 1, 1) == '0' and 0 or nil)
        local idb = string.sub(mb, 2)
        local ha, hb = fresh(ida), fresh(idb)
        if ha and hb then
          chosen, h = ida, ha
          if inflight_of(p, idb) / hb.w < inflight_of(p, ida) / ha.w then chosen, h = idb, hb end
        end
      end
    else
      local m = ix_pick(function(n)
        if strategy == 'random' then return math.floor(rand1 * n) end
        return ticket % n
      end)
      if not m then break end
      local id = string.sub(m, 2)
      h = fresh(id)
      if h then chosen = id end
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
  local new = prefix_at(h, count)
  if h.max and count >= h.max then new = 'F' end
  place(p, chosen, h, prefix_at(h, count - 1), new)
  redis.call('HINCRBY', p .. 'contrib:' .. proxy, chosen, 1)
  redis.call('ZADD', p .. 'leases', 'NX', now, proxy)
  if akey ~= '' and amode == 'soft' then redis.call('SET', p .. 'aff:' .. akey, chosen, 'PX', attl) end
  return {1, chosen, h.url, count, aff}
end
`;

/**
 * Select-and-acquire in one step, O(log N) in the instances of the model (O(k log N) with k excluded).
 * ARGV: prefix, model, strategy, proxy, rand1, rand2, affinity key ('' = none), affinity mode ('hard' | 'soft'),
 * affinity ttl ms, excluded ids...
 * Returns {1, id, url, inflight, affinity} or {code}: 0 unknown model, -1 none alive, -2 all full.
 * affinity: 'hit' (the instance `aff:<key>` names was taken), 'gone' (it names one that cannot serve now), '' otherwise.
 * A hard affinity waits for its instance when it is full (-2); a soft one then picks as usual. A soft key is
 * bound to the instance taken, for ttl ms. The pick is libs/routing pick() over the alive instances; the store
 * contract suite holds both to the same picks.
 */
export const ACQUIRE = `${NOW}${JUDGED_AT}${HOT}${LOCATE}${ACQUIRE_FN}
local excluded, nex = {}, 0
for i = 10, #ARGV do
  if not excluded[ARGV[i]] then nex = nex + 1 end
  excluded[ARGV[i]] = true
end
return acquire(ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], ARGV[8], ARGV[9], excluded, nex)
`;

/** release(): the release of RELEASE and BATCH; bkey ('' or nil: none) is bound to the instance for bttl ms. */
const RELEASE_FN = `
local function release(p, proxy, id, channel, bkey, bttl)
  if bkey and bkey ~= '' then redis.call('SET', p .. 'aff:' .. bkey, id, 'PX', bttl) end
  local key = p .. 'contrib:' .. proxy
  if redis.call('HINCRBY', key, id, -1) < 0 then
    redis.call('HDEL', key, id)
    return -1
  end
  local h = hot_of(p, id)
  if not h then return -1 end
  local count = redis.call('HINCRBY', p .. 'inflight', id, -1)
  if count < 0 then
    -- The count was already 0: nothing to move; keep it at 0.
    redis.call('HSET', p .. 'inflight', id, 0)
    return 0
  end
  -- Open: its load part moves. Full: back into the open sets. Out (not alive): stays out.
  -- Where it was is learnt from removing it from the first model's set, then the others follow.
  local new = prefix_at(h, count)
  if h.max and count >= h.max then new = 'F' end
  local m1 = h.models[1]
  if m1 and not (h.max and count + 1 >= h.max) then
    local old = prefix_at(h, count + 1)
    if redis.call('ZREM', p .. 'ld:' .. m1, old .. id) == 1 then
      redis.call('ZADD', p .. 'ld:' .. m1, 0, new .. id)
      for i = 2, #h.models do
        redis.call('ZREM', p .. 'ld:' .. h.models[i], old .. id)
        redis.call('ZADD', p .. 'ld:' .. h.models[i], 0, new .. id)
      end
    end
  elseif m1 and redis.call('SISMEMBER', p .. 'fl:' .. m1, id) == 1 then
    place(p, id, h, 'F', new)
  end
  -- An instance just dropped below its max_inflight: proxies with queued requests hear it.
  if h.max and count == h.max - 1 then redis.call('PUBLISH', channel, id) end
  return count
end
`;

/**
 * ARGV: prefix, proxy, id, capacity channel, affinity key (optional), its ttl ms. Returns the new count, or -1
 * when this proxy held no slot there. Publishes the id on the channel when it leaves max_inflight. A
 * contribution that reaches 0 stays as 0 (one write less per release); the reads leave zeros out and
 * reconcile rewrites the hash. An affinity key (a response id the instance answered with) is bound to it.
 */
export const RELEASE = `${HOT}${RELEASE_FN}
return release(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
`;

/**
 * A proxy's releases and acquires of one event-loop turn, in order, in one call: one script run
 * and one reply where each would have been a command of its own (profiled: the command objects
 * and their garbage were most of the proxy's cost per request over Node's floor). The common ops
 * are short, as every argument costs on both sides.
 * ARGV: prefix, proxy, capacity channel, strategy of the short acquires, then ops, each one of
 *   'r', id                                   a release
 *   'R', id, affinity key, its ttl ms          a release that binds a key
 *   'a', model [, rand1, rand2]                an acquire with the batch's strategy, nothing
 *                                             excluded, no affinity (the draws only for random
 *                                             and power_of_two)
 *   'A', model, strategy, rand1, rand2, affinity key, affinity mode, affinity ttl ms, n excluded, excluded ids (n)...
 * Returns one answer per op, as RELEASE and ACQUIRE return them.
 */
export const BATCH = `${NOW}${JUDGED_AT}${HOT}${LOCATE}${ACQUIRE_FN}${RELEASE_FN}
local p, proxy, channel, strategy = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local draws = strategy == 'random' or strategy == 'power_of_two'
local none = {}
local out = {}
-- One clock for the whole batch (a script is one atomic step), read at its first acquire.
local now, at
local i = 5
while i <= #ARGV do
  local op = ARGV[i]
  if not now and op ~= 'r' and op ~= 'R' then
    now = now_ms()
    at = judged_at(p, now)
  end
  if op == 'r' then
    out[#out + 1] = release(p, proxy, ARGV[i + 1], channel, '', 0)
    i = i + 2
  elseif op == 'R' then
    out[#out + 1] = release(p, proxy, ARGV[i + 1], channel, ARGV[i + 2], ARGV[i + 3])
    i = i + 4
  elseif op == 'a' then
    if draws then
      out[#out + 1] = acquire(p, ARGV[i + 1], strategy, proxy, tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), '', '', 0, none, 0, now, at)
      i = i + 4
    else
      out[#out + 1] = acquire(p, ARGV[i + 1], strategy, proxy, 0, 0, '', '', 0, none, 0, now, at)
      i = i + 2
    end
  else
    local n = tonumber(ARGV[i + 8])
    local excluded, nex = {}, 0
    for j = i + 9, i + 8 + n do
      if not excluded[ARGV[j]] then nex = nex + 1 end
      excluded[ARGV[j]] = true
    end
    out[#out + 1] = acquire(p, ARGV[i + 1], ARGV[i + 2], proxy, tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]), ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], excluded, nex, now, at)
    i = i + 9 + n
  end
end
return out
`;

/** Takes a proxy's contributions out of the counts (and moves the instances in the index). */
const SUBTRACT = `
local function subtract(p, proxy, at)
  local key = p .. 'contrib:' .. proxy
  local flat = redis.call('HGETALL', key)
  for i = 1, #flat, 2 do
    local id, held = flat[i], tonumber(flat[i + 1])
    local h = hot_of(p, id)
    if h and held > 0 then
      local before = inflight_of(p, id)
      local count = redis.call('HINCRBY', p .. 'inflight', id, -held)
      if count < 0 then
        redis.call('HSET', p .. 'inflight', id, 0)
        count = 0
      end
      replace(p, id, h, h, before, count, at)
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
  local h = hot_of(p, id)
  if h then
    local new = math.max(0, math.floor(tonumber(want[id]) or 0))
    if new ~= old then
      local before = inflight_of(p, id)
      local count = redis.call('HINCRBY', p .. 'inflight', id, new - old)
      if count < 0 then
        redis.call('HSET', p .. 'inflight', id, 0)
        count = 0
      end
      replace(p, id, h, h, before, count, at)
    end
    if new > 0 then redis.call('HSET', key, id, new) end
  end
end
redis.call('ZADD', p .. 'leases', 'NX', now, proxy)
return 1
`;

/**
 * ARGV: prefix, proxy, ttl_ms, info JSON[, stats JSON]. The stats (the proxy's request counters per
 * instance) replace its previous ones when given. Returns 1 when a control plane holds its lease
 * (or none ever claimed one), 0 when it lapsed.
 */
export const RENEW_LEASE = `${NOW}
local p, proxy = ARGV[1], ARGV[2]
local now = now_ms()
redis.call('ZADD', p .. 'leases', now + tonumber(ARGV[3]), proxy)
redis.call('HSET', p .. 'lease_info', proxy, ARGV[4])
redis.call('HSET', p .. 'lease_seen', proxy, now)
redis.call('HDEL', p .. 'lease_expired', proxy)
if ARGV[5] then redis.call('HSET', p .. 'stats', proxy, ARGV[5]) end
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
redis.call('HDEL', p .. 'lease_expired', proxy)
redis.call('HDEL', p .. 'stats', proxy)
return 1
`;

/**
 * ARGV: prefix, grace_ms. Returns the reaped proxy ids. A lease is reaped only when an earlier sweep,
 * at least grace_ms ago, already found it expired and no renewal came since (a renewal clears
 * \`lease_expired\`): after Redis hung longer than a lease, the first sweep it runs only takes note,
 * and every live proxy renews before the next one can reap.
 */
export const REAP = `${NOW}${INDEX}${SUBTRACT}
local p, grace = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local at = judged_at(p, now)
local reaped = {}
for _, proxy in ipairs(redis.call('ZRANGEBYSCORE', p .. 'leases', '-inf', '(' .. now)) do
  local since = tonumber(redis.call('HGET', p .. 'lease_expired', proxy) or '')
  if not since then
    redis.call('HSET', p .. 'lease_expired', proxy, now)
  elseif now - since >= grace then
    subtract(p, proxy, at)
    redis.call('ZREM', p .. 'leases', proxy)
    redis.call('HDEL', p .. 'lease_info', proxy)
    redis.call('HDEL', p .. 'lease_seen', proxy)
    redis.call('HDEL', p .. 'lease_expired', proxy)
    redis.call('HDEL', p .. 'stats', proxy)
    reaped[#reaped + 1] = proxy
  end
end
return reaped
`;

/** Per-instance hashes a registry sync returns, in this order (preceded by rec and reg in a full one). */
export const SYNC_FIELDS = ['exp', 'down', 'qps', 'wait', 'sat'] as const;

/**
 * ARGV: prefix, version, changes, at (the caller's cursor; -1 -1 -1 for none).
 * Returns {{now, cp_until, version, changes}} when nothing changed since the cursor: one small read.
 * Otherwise {head, ids, [rec, reg when full,] ...SYNC_FIELDS values for those ids}: every instance when the
 * version moved, else those whose liveness or engine signals changed after the cursor, or whose ttl
 * lapsed since the moment it was judged at (a lapse is news before any sweep records it).
 */
export const SYNC = `${NOW}${JUDGED_AT}
local p = ARGV[1]
local ver = tonumber(redis.call('GET', p .. 'ver') or '0')
local seq = tonumber(redis.call('GET', p .. 'chgseq') or '0')
local now = now_ms()
local head = { now, redis.call('HGET', p .. 'cp', 'until'), ver, seq }
-- A change counter behind the caller's means a new (emptied) Redis: start over.
local full = tonumber(ARGV[2]) ~= ver or tonumber(ARGV[3]) > seq
local ids
if full then
  ids = redis.call('HKEYS', p .. 'rec')
else
  ids = redis.call('ZRANGEBYSCORE', p .. 'chg', '(' .. ARGV[3], '+inf')
  local seen = {}
  for _, id in ipairs(ids) do seen[id] = true end
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', p .. 'live', ARGV[4], '(' .. judged_at(p, now))) do
    if not seen[id] then ids[#ids + 1] = id end
  end
  if #ids == 0 then return { head } end
end
local out = { head, ids }
local fields = { ${SYNC_FIELDS.map((f) => `'${f}'`).join(', ')} }
if full then
  table.insert(fields, 1, 'reg')
  table.insert(fields, 1, 'rec')
end
for _, f in ipairs(fields) do
  local values = {}
  -- In slices: unpack has a stack limit.
  for i = 1, #ids, 500 do
    local got = redis.call('HMGET', p .. f, unpack(ids, i, math.min(i + 499, #ids)))
    for _, v in ipairs(got) do values[#values + 1] = v end
  end
  out[#out + 1] = values
end
return out
`;

/** Per-instance hashes the reads return, in this order. */
export const INSTANCE_FIELDS = ['reg', 'seen', 'exp', 'down', 'qps', 'gpu', 'inflight', 'eng', 'sat'] as const;
const FIELD_LIST = `{${INSTANCE_FIELDS.map((f) => `'${f}'`).join(', ')}}`;

/**
 * ARGV: prefix. One consistent read of the whole pool:
 * {now, ver, cp_watch|false, rec, ...INSTANCE_FIELDS hashes, leases, lease_info, lease_seen, stats, {proxy, contrib}...}.
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
out[#out + 1] = redis.call('HGETALL', p .. 'stats')
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
  if n and tonumber(n) > 0 then
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
