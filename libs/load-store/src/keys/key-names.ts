/**
 * Every Redis key of the client API keys, built here and nowhere else. They share one hash tag,
 * `{keys}`, so each script touches one slot of a Redis Cluster, apart from every routing pool.
 */
export const KEYS_TAG = 'sy:{keys}:';
/** Hash: key id → sha256 of its secret. */
export const KEY_IDS = `${KEYS_TAG}ids`;
/** Prefix of each key's own hash (record, limit state, this minute's usage), named by the sha256 of its secret. */
export const KEY_RECORD_PREFIX = `${KEYS_TAG}k:`;
export const keyRecordKey = (sha256: string): string => KEY_RECORD_PREFIX + sha256;

/** The window of both limits, and of the usage shown, in ms. */
export const WINDOW_MS = 60_000;
/** Float slack: 7 requests of 60000/7 ms each must fit a 60000 ms window exactly. */
export const EPSILON = 1e-6;
