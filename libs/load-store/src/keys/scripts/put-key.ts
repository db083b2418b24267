import { KEY_SCRIPT_COMMON } from './common';

/**
 * Adds a key or updates one (same id): its record fields; its limit state is kept. A key whose
 * secret changed (a config file edited) loses its old hash, so the old secret stops working.
 *
 * KEYS[1]: the ids hash (sy:{keys}:ids)
 * ARGV: key hash prefix, sha256, id, name, prefix, models ('\\n'-separated with one before and after, '' = all),
 * rpm (0 = none), tpm (0 = none), source, created_at ('' = now)
 * Returns 1 created, 0 updated, -1 when the same secret already belongs to another id (nothing written).
 */
export const PUT_KEY = `${KEY_SCRIPT_COMMON}
local kp, sha, id = ARGV[1], ARGV[2], ARGV[3]
local k = kp .. sha
local holder = redis.call('HGET', k, 'id')
if holder and holder ~= id then return -1 end
local old = redis.call('HGET', KEYS[1], id)
if old and old ~= sha then redis.call('DEL', kp .. old) end
local at = ARGV[10]
if at == '' then at = redis.call('HGET', k, 'created_at') or tostring(now_ms()) end
redis.call('HSET', k, 'id', id, 'name', ARGV[4], 'prefix', ARGV[5], 'models', ARGV[6], 'rpm', ARGV[7], 'tpm', ARGV[8], 'source', ARGV[9], 'created_at', at)
redis.call('HSET', KEYS[1], id, sha)
if old then return 0 end
return 1
`;
