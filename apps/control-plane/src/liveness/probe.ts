import type { ModelInfo } from '@switchyard/contracts';
import { Agent, request } from 'undici';

/** Larger /metrics pages are refused: real engines publish well under 1 MiB, and parsing 2 MiB already takes ~0.2 s. */
export const MAX_SCRAPE_BYTES = 2 * 1024 * 1024;
/** /health and /v1/models answers are small; a larger one is not an engine's. */
const MAX_SMALL_BYTES = 256 * 1024;

/** Probes hold no connection between intervals open for long, and never more than a few per instance. */
const agent = new Agent({ keepAliveTimeout: 10_000, connections: 4 });

export interface FetchResult {
  status: number;
  body: string;
}

/**
 * GET with a hard deadline and a size cap: a hanging or endless answer costs at most
 * `timeoutMs` and `maxBytes`. Throws an Error whose message says what went wrong.
 */
export async function boundedGet(url: string, timeoutMs: number, maxBytes: number, apiKey?: string): Promise<FetchResult> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    // An instance with its own key (vLLM --api-key protects /v1/*) is probed with it; never logged.
    const headers = apiKey ? { authorization: `Bearer ${apiKey}` } : undefined;
    const res = await request(url, { method: 'GET', headers, dispatcher: agent, signal, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) {
        res.body.destroy();
        throw new Error(`answer larger than ${maxBytes} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') };
  } catch (err) {
    if (signal.aborted) throw new Error(`no answer within ${timeoutMs / 1000} s`);
    const e = err as { code?: string; message: string };
    throw new Error(e.code && !e.message.includes(e.code) ? `${e.code}: ${e.message}` : e.message);
  }
}

export type HealthPath = '/health' | '/v1/models';

export type HealthOutcome = { ok: true; path: HealthPath } | { ok: false; reason: string };

/**
 * One liveness probe: `GET /health`; where an engine has no /health (404 or 405),
 * `GET /v1/models` instead. `known` is the path that worked last time, tried first.
 */
export async function probeHealth(baseUrl: string, timeoutMs: number, known: HealthPath = '/health', apiKey?: string): Promise<HealthOutcome> {
  const attempt = async (path: HealthPath): Promise<HealthOutcome | 'absent'> => {
    try {
      const r = await boundedGet(baseUrl + path, timeoutMs, MAX_SMALL_BYTES, apiKey);
      if (r.status >= 200 && r.status < 300) return { ok: true, path };
      if (path === '/health' && (r.status === 404 || r.status === 405)) return 'absent';
      return { ok: false, reason: `GET ${path}: status ${r.status}` };
    } catch (err) {
      return { ok: false, reason: `GET ${path}: ${(err as Error).message}` };
    }
  };
  const first = await attempt(known);
  if (first !== 'absent') return first;
  const models = await attempt('/v1/models');
  return models === 'absent' ? { ok: false, reason: 'GET /v1/models: status 404' } : models;
}

/** The model ids an OpenAI-compatible server lists at /v1/models; throws naming what is wrong. */
export async function listModels(baseUrl: string, timeoutMs: number, apiKey?: string): Promise<string[]> {
  return Object.keys(await readModels(baseUrl, timeoutMs, apiKey));
}

/** What /v1/models says per model id: max_model_len and owned_by where the engine gives them (vLLM, SGLang do), null otherwise. */
export async function readModels(baseUrl: string, timeoutMs: number, apiKey?: string): Promise<Record<string, ModelInfo>> {
  const r = await boundedGet(`${baseUrl}/v1/models`, timeoutMs, MAX_SMALL_BYTES, apiKey);
  if (r.status < 200 || r.status >= 300) throw new Error(`GET /v1/models: status ${r.status}`);
  let body: unknown;
  try {
    body = JSON.parse(r.body);
  } catch {
    throw new Error('GET /v1/models: not JSON');
  }
  const data = (body as { data?: unknown })?.data;
  if (!Array.isArray(data)) throw new Error('GET /v1/models: no data list');
  const out: Record<string, ModelInfo> = Object.create(null);
  for (const m of data as { id?: unknown; max_model_len?: unknown; owned_by?: unknown }[]) {
    if (typeof m?.id !== 'string' || !m.id) continue;
    const len = m.max_model_len;
    out[m.id] = {
      max_model_len: typeof len === 'number' && Number.isInteger(len) && len > 0 ? len : null,
      owned_by: typeof m.owned_by === 'string' && m.owned_by.length <= 128 ? m.owned_by : null,
    };
  }
  return out;
}
