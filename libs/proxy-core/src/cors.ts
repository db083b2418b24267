import type http from 'node:http';
import { errorBody } from '@switchyard/contracts';

const PREFLIGHT_MAX_AGE_S = '600';
/** Headers a browser client may read from an answer (beyond the CORS-safelisted ones). */
const EXPOSED = 'x-request-id, x-switchyard-instance, retry-after, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests';

/**
 * CORS for browser clients (CORS_ORIGINS), decided once at start: the allowed origins in a set,
 * so a request costs one header read and a set lookup. Off (an empty list): nothing is added.
 */
export class CorsPolicy {
  private readonly any: boolean;
  private readonly origins: ReadonlySet<string>;

  constructor(origins: readonly string[]) {
    this.any = origins.includes('*');
    this.origins = new Set(origins.map((o) => o.toLowerCase()));
  }

  get enabled(): boolean {
    return this.any || this.origins.size > 0;
  }

  allows(origin: string | undefined): origin is string {
    return origin !== undefined && (this.any || this.origins.has(origin.toLowerCase()));
  }

  /** Marks an actual response for an allowed origin; the answer varies by origin unless every origin is allowed. */
  decorate(req: http.IncomingMessage, res: http.ServerResponse): void {
    const origin = req.headers.origin;
    if (!this.allows(origin)) {
      if (!this.any && origin !== undefined) res.setHeader('vary', 'origin');
      return;
    }
    res.setHeader('access-control-allow-origin', this.any ? '*' : origin);
    res.setHeader('access-control-expose-headers', EXPOSED);
    if (!this.any) res.setHeader('vary', 'origin');
  }

  /** Answers a preflight: 204 with the allowances for an allowed origin, 403 in the OpenAI shape otherwise. Never forwarded, never takes a slot. */
  preflight(req: http.IncomingMessage, res: http.ServerResponse): void {
    const origin = req.headers.origin;
    if (!this.allows(origin)) {
      const given: string | undefined = req.headers.origin;
      const data = JSON.stringify(errorBody(`origin: ${given === undefined ? 'missing' : `'${given.slice(0, 200)}' is not in CORS_ORIGINS`}`, 'permission_error', 'cors_origin_not_allowed'));
      res.writeHead(403, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...(this.any ? {} : { vary: 'origin' }) });
      return void res.end(data);
    }
    const requested = req.headers['access-control-request-headers'];
    res.writeHead(204, {
      'access-control-allow-origin': this.any ? '*' : origin,
      'access-control-allow-methods': 'GET, POST, OPTIONS',
      // The official SDKs send their own x-stainless-* headers: whatever the browser asks to send is allowed (this is not where auth happens).
      'access-control-allow-headers': typeof requested === 'string' && requested.length <= 4096 ? requested : 'authorization, content-type',
      'access-control-max-age': PREFLIGHT_MAX_AGE_S,
      ...(this.any ? {} : { vary: 'origin' }),
    });
    res.end();
  }
}
