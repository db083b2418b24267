/**
 * The selection scripts as they stood before issue 12 (at 0190d60): ACQUIRE reads every
 * instance of the model on every call. Kept verbatim so the scale benchmark measures the
 * old cost beside the new one in the same run; only the bench uses them.
 */

const NOW = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

const BYTEWISE = `
local function bytewise(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
`;

export const OLD_REGISTER = `${NOW}
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
redis.call('INCR', p .. 'ver')
return created
`;

export const OLD_ACQUIRE = `${NOW}${BYTEWISE}
local p, model, strategy, proxy = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ids = redis.call('SMEMBERS', p .. 'model:' .. model)
if #ids == 0 then return {0} end
local excluded = {}
for _, id in ipairs(cjson.decode(ARGV[7])) do excluded[id] = true end
table.sort(ids, bytewise)
local now = now_ms()
local inf = redis.call('HMGET', p .. 'inflight', unpack(ids))
local exp = redis.call('HMGET', p .. 'exp', unpack(ids))
local qps = redis.call('HMGET', p .. 'qps', unpack(ids))
local w = redis.call('HMGET', p .. 'w', unpack(ids))
local mx = redis.call('HMGET', p .. 'max', unpack(ids))
local open = {}
local alive = 0
for i, id in ipairs(ids) do
  if not excluded[id] and exp[i] and tonumber(exp[i]) >= now then
    alive = alive + 1
    local n = tonumber(inf[i]) or 0
    if not mx[i] or n < tonumber(mx[i]) then
      local weight = tonumber(w[i]) or 1
      open[#open + 1] = { id = id, s = n / weight, q = (tonumber(qps[i]) or 0) / weight }
    end
  end
end
if alive == 0 then return {-1} end
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
  local best, bestq, ties = math.huge, math.huge, {}
  for _, c in ipairs(open) do
    if c.s < best or (c.s == best and c.q < bestq) then
      best, bestq, ties = c.s, c.q, { c }
    elseif c.s == best and c.q == bestq then
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

export const OLD_RELEASE = `
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
