import { KEY_SCRIPT_COMMON } from './common';

/** The fields read-keys returns per key, in this order, after its id and sha256. */
export const READ_FIELDS = ['name', 'prefix', 'models', 'rpm', 'tpm', 'source', 'created_at', 'rt', 'tt', 'wm', 'wr', 'wt'] as const;

/**
 * Keys with their limit state and this minute's usage, on the store's clock (admin reads only).
 *
 * KEYS[1]: the ids hash (sy:{keys}:ids)
 * ARGV[1]: key hash prefix; ARGV[2..]: ids to read (none: every key)
 * Returns {now, {id, sha256, READ_FIELDS...}...}; unknown ids are left out.
 */
export const READ_KEYS = `${KEY_SCRIPT_COMMON}
local kp = ARGV[1]
local out = {}
local function add(id, sha)
  local f = redis.call('HMGET', kp .. sha, ${READ_FIELDS.map((f) => `'${f}'`).join(', ')})
  if not f[1] then return end
  local row = {id, sha}
  for i = 1, #f do row[#row + 1] = f[i] or '' end
  out[#out + 1] = row
end
if #ARGV > 1 then
  for i = 2, #ARGV do
    local sha = redis.call('HGET', KEYS[1], ARGV[i])
    if sha then add(ARGV[i], sha) end
  end
else
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do add(all[i], all[i + 1]) end
end
return {now_ms(), out}
`;
