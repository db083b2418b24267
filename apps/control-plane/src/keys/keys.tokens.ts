/** The client API key store beside the load store (keyStoreFor). */
export const KEY_STORE = Symbol('KEY_STORE');
/** Keys declared in the config file's `keys:` list, written to the store at start. */
export const DECLARED_KEYS = Symbol('DECLARED_KEYS');
