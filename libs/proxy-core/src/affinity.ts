import type http from 'node:http';
import type { Affinity } from '@switchyard/load-store';
import type { Slot } from './exchange';
import { RESPONSES_ROUTE } from './routes';

/** Longer ids or session names are not bound: a key is a Redis key. */
const KEY_MAX = 256;

/**
 * Where a request should land (see Affinity in the store): a follow-up on `/v1/responses`
 * goes where its previous response was made (hard: the state lives there); with
 * SESSION_AFFINITY, requests of one `x-session-id` prefer one instance (soft: warm cache).
 */
export function affinityOf(route: string, body: { previous_response_id?: unknown } | null, headers: http.IncomingHttpHeaders, ttlMs: number, sessions: boolean): Affinity | undefined {
  if (ttlMs <= 0) return undefined;
  if (route === RESPONSES_ROUTE) {
    const prev = body?.previous_response_id;
    if (typeof prev === 'string' && prev && prev.length <= KEY_MAX) return { key: `r:${prev}`, mode: 'hard', ttlMs };
  }
  if (!sessions) return undefined;
  const session = headers['x-session-id'];
  if (typeof session === 'string' && session && session.length <= KEY_MAX) return { key: `s:${session}`, mode: 'soft', ttlMs };
  return undefined;
}

/** A whole `/v1/responses` answer: binds its `id` to the instance that made it. */
export function bindWhole(slot: Slot, body: Buffer): void {
  try {
    const id = (JSON.parse(body.toString('utf8')) as { id?: unknown } | null)?.id;
    if (typeof id === 'string' && id && id.length <= KEY_MAX) slot.bind?.(`r:${id}`);
  } catch {
    // Not JSON: nothing to continue from.
  }
}

/**
 * A streamed `/v1/responses` answer: a hook for the stream's SSE tap (one parser per stream)
 * that binds the response id `response.created` names, once; later events cost one check.
 */
export function streamedIdBinder(slot: Slot): (data: string) => void {
  let bound = false;
  return (data) => {
    if (bound || !data.includes('"response"')) return;
    try {
      const id = (JSON.parse(data) as { response?: { id?: unknown } } | null)?.response?.id;
      if (typeof id !== 'string' || !id || id.length > KEY_MAX) return;
      slot.bind?.(`r:${id}`);
      bound = true;
    } catch {
      // Not JSON: keep looking.
    }
  };
}
