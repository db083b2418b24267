import { KEY_SCRIPT_COMMON } from './common';

/**
 * Corrects the token estimates taken at admission with what the answers' usage said, for several
 * keys at once (a proxy batches them off the request path). A key revoked meanwhile is skipped,
 * never written back into existence.
 *
 * KEYS[1]: the ids hash (sy:{keys}:ids), naming the slot
 * ARGV[1]: the prefix of key hashes (sy:{keys}:k:); then pairs: sha256, token delta (negative: fewer used than estimated)
 * Returns the number of keys corrected.
 */
export const SETTLE_KEYS = `${KEY_SCRIPT_COMMON}
local kp = ARGV[1]
local now = now_ms()
local minute = math.floor(now / W)
local n = 0
for i = 2, #ARGV, 2 do
  local k, d = kp .. ARGV[i], tonumber(ARGV[i + 1])
  local f = redis.call('HMGET', k, 'id', 'tpm', 'tt', 'wm', 'wt')
  if f[1] then
    local tpm = tonumber(f[2]) or 0
    if tpm > 0 then
      local tt = math.max(math.max(tonumber(f[3]) or 0, now) + d * W / tpm, now)
      redis.call('HSET', k, 'tt', tt)
    end
    if tonumber(f[4]) == minute then redis.call('HSET', k, 'wt', math.max(0, (tonumber(f[5]) or 0) + d)) end
    n = n + 1
  end
end
return n
`;
