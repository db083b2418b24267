import type { EngineKind } from '@switchyard/contracts';

/** How an engine answers `GET /health`, as its docs and server code describe it. */
export interface EngineHealth {
  /** Answer of a ready engine. */
  ready: { status: number; body: string; contentType?: string };
  /** Answer while it cannot serve (before it listens at all, the connection is refused). */
  notReady: { status: number; body: string; contentType?: string };
  note: string;
}

/**
 * Reference for probes and for the fake engines in apps/e2e; nothing here is sent anywhere.
 * A probe must treat any non-2xx, a refused connection and a timeout alike: not healthy.
 */
export const ENGINE_HEALTH: Readonly<Record<Exclude<EngineKind, 'unknown'>, EngineHealth>> = {
  vllm: {
    ready: { status: 200, body: '' },
    notReady: { status: 503, body: '' },
    note: 'vLLM answers 200 with an empty body; 503 (empty) once its engine core has died. While the model loads the API server is not listening yet, so the connection is refused.',
  },
  sglang: {
    ready: { status: 200, body: '' },
    notReady: { status: 503, body: '' },
    note: 'SGLang answers 200 with an empty body when its scheduler responds, 503 while starting up or when the scheduler does not respond in time.',
  },
  llamacpp: {
    ready: { status: 200, body: '{"status":"ok"}', contentType: 'application/json; charset=utf-8' },
    notReady: {
      status: 503,
      body: '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}',
      contentType: 'application/json; charset=utf-8',
    },
    note: 'llama.cpp server answers 200 {"status":"ok"} once the model is loaded and 503 "Loading model" before; /v1/models answers even while loading.',
  },
  tgi: {
    ready: { status: 200, body: '' },
    notReady: { status: 503, body: '{"error":"unhealthy","error_type":"healthcheck"}', contentType: 'application/json' },
    note: 'TGI answers 200 when its shards answer a health check, 503 otherwise.',
  },
};
