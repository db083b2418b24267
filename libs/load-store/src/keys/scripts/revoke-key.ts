/**
 * Revokes a key: its hash goes, so the next admission on any proxy finds nothing (no cache to clear).
 *
 * KEYS[1]: the ids hash (sy:{keys}:ids)
 * ARGV[1]: key hash prefix; ARGV[2]: id
 * Returns 1 when revoked, 0 when unknown.
 */
export const REVOKE_KEY = `
local sha = redis.call('HGET', KEYS[1], ARGV[2])
if not sha then return 0 end
redis.call('DEL', ARGV[1] .. sha)
redis.call('HDEL', KEYS[1], ARGV[2])
return 1
`;
