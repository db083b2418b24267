/**
 * Header hygiene between clients and instances, decided once per proxy (the sets below are
 * built at start): which client credentials never reach an instance, which instance cookies
 * never reach a client, and the `via` entry that detects a request coming back to a proxy.
 */

/** Our `via` entry (RFC 9110 §7.6.3): protocol version and a pseudonym instead of a host name. */
export const VIA_ENTRY = '1.1 switchyard';
const VIA_NAME = 'switchyard';

/**
 * Client headers kept from instances. Credentials a client gives the gateway are for the
 * gateway: an instance (anyone able to register one) must not receive them unless the
 * operator asks (FORWARD_CLIENT_AUTH=true forwards Authorization and Cookie, never the rest).
 */
export function requestHeadersToDrop(forwardClientAuth: boolean): Set<string> {
  return new Set(forwardClientAuth ? ['x-api-key'] : ['authorization', 'cookie', 'x-api-key']);
}

/**
 * Instance headers kept from clients. A cookie an instance sets would be scoped to the gateway's
 * host, shared by every instance behind it and handed back to whichever one the next request
 * meets: dropped, unless client credentials are forwarded (then the client talks to the engines' auth).
 */
export function responseHeadersToDrop(forwardClientAuth: boolean): Set<string> | undefined {
  return forwardClientAuth ? undefined : new Set(['set-cookie']);
}

/** The `via` to send upstream: ours appended to what the request carried. */
export function viaUpstream(incoming: string | string[] | undefined): string {
  if (incoming === undefined || incoming === '') return VIA_ENTRY;
  return `${Array.isArray(incoming) ? incoming.join(', ') : incoming}, ${VIA_ENTRY}`;
}

/** True when the request already passed a Switchyard proxy: one of its `via` entries is ours. */
export function cameThroughSwitchyard(via: string | string[] | undefined): boolean {
  if (via === undefined) return false;
  const value = Array.isArray(via) ? via.join(',') : via;
  if (!value.toLowerCase().includes(VIA_NAME)) return false;
  // Each entry: protocol received-by [comment]; ours is matched by its received-by, not anywhere in a comment.
  return value.split(',').some((entry) => entry.trim().split(/\s+/)[1]?.toLowerCase() === VIA_NAME);
}
