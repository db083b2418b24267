import http from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Agent, request } from 'undici';
import { errorBody, ErrorBody, makeProxyId } from '@switchyard/contracts';
import type { LoadStore } from '@switchyard/load-store';
import type { ProxyConfig } from './proxy-config';

const ROUTES = new Set(['/v1/chat/completions', '/v1/completions', '/v1/embeddings']);
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length']);

function sendError(res: http.ServerResponse, status: number, body: ErrorBody, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.destroy();
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
  res.end(data);
}

/** The data-plane hot path: plain node http, one undici Agent, the store's atomic acquire and an exactly-once release. */
export class ProxyServer {
  readonly proxyId: string;
  readonly server: http.Server;
  private readonly agent = new Agent({ keepAliveTimeout: 30_000, connections: 256 });
  private leaseTimer?: NodeJS.Timeout;
  private inflightHttp = 0;
  private seq = 0;

  constructor(private readonly config: ProxyConfig, private readonly store: LoadStore) {
    this.proxyId = makeProxyId(config.PROXY_NAME);
    this.server = http.createServer((req, res) => this.onRequest(req, res));
  }

  async listen(port: number, host: string): Promise<void> {
    await this.renewLease();
    this.leaseTimer = setInterval(() => void this.renewLease(), 1000);
    this.leaseTimer.unref();
    await new Promise<void>((resolve) => this.server.listen(port, host, resolve));
  }

  async close(): Promise<void> {
    clearInterval(this.leaseTimer);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.store.dropLease(this.proxyId).catch(() => undefined);
    await this.agent.close();
  }

  private async renewLease(): Promise<void> {
    await this.store
      .renewLease({ proxy_id: this.proxyId, inflight_http: this.inflightHttp, queued: {}, draining: false, degraded: false }, this.config.LEASE_TTL_S * 1000)
      .catch(() => undefined);
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    // Open exchanges are counted until the response body has ended or been abandoned.
    this.inflightHttp += 1;
    res.once('close', () => (this.inflightHttp -= 1));
    const path = req.url?.split('?')[0] ?? '/';
    if (req.method === 'GET' && path === '/healthz') return sendJson(res, { status: 'ok' });
    if (req.method === 'POST' && ROUTES.has(path)) return void this.forward(req, res, path);
    sendError(res, 404, errorBody(`no route ${req.method} ${path}`, 'not_found_error', 'route_not_found'));
  }

  private async readBody(req: http.IncomingMessage): Promise<Buffer | null> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > this.config.MAX_BODY_BYTES) return null;
      chunks.push(c as Buffer);
    }
    return Buffer.concat(chunks);
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse, path: string): Promise<void> {
    const requestId = (req.headers['x-request-id'] as string | undefined) ?? `${this.proxyId}-${(++this.seq).toString(36)}`;
    res.setHeader('x-request-id', requestId);
    const body = await this.readBody(req);
    if (!body) return sendError(res, 413, errorBody(`body: larger than MAX_BODY_BYTES (${this.config.MAX_BODY_BYTES})`, 'invalid_request_error', 'body_too_large'));
    let model: unknown;
    try {
      model = (JSON.parse(body.toString('utf8')) as { model?: unknown }).model;
    } catch {
      return sendError(res, 400, errorBody('body: not valid JSON', 'invalid_request_error', 'invalid_json'));
    }
    if (typeof model !== 'string' || !model) return sendError(res, 400, errorBody('model: required string', 'invalid_request_error', 'invalid_field', 'model'));
    if (res.destroyed) return;
    const picked = await this.store.acquire({ proxyId: this.proxyId, model, strategy: this.config.ROUTING_STRATEGY });
    if (picked.kind === 'unknown_model') return sendError(res, 404, errorBody(`model '${model}' is not served by any instance`, 'not_found_error', 'model_not_found', 'model'));
    if (picked.kind !== 'acquired') return sendError(res, 503, errorBody(`no alive instance with capacity for model '${model}'`, 'service_unavailable', 'no_instance_available'), { 'retry-after': '1' });

    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      void this.store.release(this.proxyId, picked.instance_id).catch(() => undefined);
    };
    const abort = new AbortController();
    // Client gone: abort the upstream call first, then give the slot back.
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
      release();
    });
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && typeof v === 'string') headers[k] = v;
    headers['x-request-id'] = requestId;
    try {
      const upstream = await request(picked.url + path, {
        method: 'POST',
        headers,
        body,
        dispatcher: this.agent,
        signal: abort.signal,
        headersTimeout: this.config.UPSTREAM_TIMEOUT_S * 1000,
        bodyTimeout: this.config.UPSTREAM_TIMEOUT_S * 1000,
      });
      const out: Record<string, string | string[]> = { 'x-switchyard-instance': picked.instance_id, 'x-request-id': requestId };
      for (const [k, v] of Object.entries(upstream.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
      res.writeHead(upstream.statusCode, out);
      await pipeline(upstream.body, res);
    } catch (err) {
      if (!res.headersSent) {
        const timeout = (err as { code?: string }).code?.includes('TIMEOUT');
        sendError(res, timeout ? 504 : 502, errorBody(`upstream ${picked.instance_id} failed: ${(err as Error).message}`, timeout ? 'timeout_error' : 'server_error', timeout ? 'upstream_timeout' : 'upstream_error'));
      } else if (!res.writableEnded) {
        res.end(`data: ${JSON.stringify(errorBody('upstream failed mid-stream', 'server_error', 'upstream_error'))}\n\n`);
      }
    } finally {
      release();
    }
  }
}

function sendJson(res: http.ServerResponse, body: unknown): void {
  const data = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  res.end(data);
}
