import { KEY_SCRIPT_COMMON } from './common';

/**
 * The one store call per request of a client key: the key's record, its model list, both limits
 * and the admission, in one atomic step. O(1): one hash read, one hash write.
 *
 * Limits are GCRA token buckets (a bucket of `rpm` requests refilled at rpm per minute; the same
 * for tokens): `rt` and `tt` are the times at which each bucket would be full again. A request
 * fits while that time stays within one window of now. A full token bucket takes one request
 * however large (as the first request of a minute would); a partly used one waits for room.
 * `wm`, `wr`, `wt`: the clock minute and what was admitted in it (shown, not enforced).
 *
 * KEYS[1]: the key's hash (sy:{keys}:k:<sha256 of the secret>)
 * ARGV[1]: model; ARGV[2]: estimated tokens (a whole number >= 0)
 * Returns {0} unknown (or revoked); {2, id} model not allowed;
 * {status, id, rpm, remaining_requests, reset_requests_ms, tpm, remaining_tokens, reset_tokens_ms, retry_ms, models}
 * with status 1 admitted, 3 over rpm, 4 over tpm; rpm/tpm 0 and remaining -1 where the key has no such limit.
 */
export const ADMIT_KEY = `${KEY_SCRIPT_COMMON}
local k, model, cost = KEYS[1], ARGV[1], tonumber(ARGV[2])
local f = redis.call('HMGET', k, 'id', 'models', 'rpm', 'tpm', 'rt', 'tt', 'wm', 'wr', 'wt')
local id = f[1]
if not id then return {0} end
local models = f[2] or ''
if models ~= '' and not string.find(models, '\\n' .. model .. '\\n', 1, true) then return {2, id} end
local now = now_ms()
local rpm, tpm = tonumber(f[3]) or 0, tonumber(f[4]) or 0
local rt = math.max(tonumber(f[5]) or 0, now)
local tt = math.max(tonumber(f[6]) or 0, now)
local status, retry = 1, 0
local nrt, ntt = rt, tt
if rpm > 0 then
  nrt = rt + W / rpm
  if nrt - now > W + EPS then status, retry = 3, nrt - now - W end
end
if status == 1 and tpm > 0 then
  ntt = tt + cost * W / tpm
  if tt > now and ntt - now > W + EPS then status, retry = 4, math.min(ntt - now - W, tt - now) end
end
if status == 1 then
  local minute = math.floor(now / W)
  local wr, wt = tonumber(f[8]) or 0, tonumber(f[9]) or 0
  if tonumber(f[7]) ~= minute then wr, wt = 0, 0 end
  rt, tt = nrt, ntt
  redis.call('HSET', k, 'rt', rt, 'tt', tt, 'wm', minute, 'wr', wr + 1, 'wt', wt + cost)
end
local rem_req, rem_tok = -1, -1
if rpm > 0 then rem_req = math.max(0, math.floor((W - (rt - now)) * rpm / W + EPS)) end
if tpm > 0 then rem_tok = math.max(0, math.floor((W - (tt - now)) * tpm / W + EPS)) end
return {status, id, rpm, rem_req, math.ceil(rt - now), tpm, rem_tok, math.ceil(tt - now), math.ceil(retry), models}
`;
