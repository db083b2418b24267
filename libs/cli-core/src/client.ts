import type { ApiKeyCreated, ApiKeysResponse, DebugStatusResponse, InstanceLoadsResponse, RegistrationResponse } from '@switchyard/contracts';
import { CliError, Connection } from './args';

/** An operator waiting at a terminal: long enough for a busy control plane, short enough to notice a hung one. */
const REQUEST_TIMEOUT_MS = 5000;

export interface Readiness {
  ready: boolean;
  store: string;
  detail?: string;
}

/** The control plane's admin and debug API, with every failure turned into one readable CliError. */
export class ControlPlaneClient {
  constructor(private readonly conn: Connection, private readonly signal?: AbortSignal) {}

  get url(): string {
    return this.conn.url;
  }

  async readiness(): Promise<Readiness> {
    const { status, body } = await this.send('GET', '/readyz', undefined, false);
    const b = (body ?? {}) as { store?: string; detail?: string };
    if (status === 200) return { ready: true, store: b.store ?? 'ok' };
    if (status === 503) return { ready: false, store: b.store ?? 'unknown', detail: b.detail };
    throw this.failure('GET', '/readyz', status, body);
  }

  status(): Promise<DebugStatusResponse> {
    return this.json('GET', '/debug/status');
  }

  instanceLoads(includeExpired: boolean): Promise<InstanceLoadsResponse> {
    return this.json('GET', includeExpired ? '/debug/instance_loads?include_expired=true' : '/debug/instance_loads');
  }

  register(body: Record<string, unknown>): Promise<RegistrationResponse> {
    return this.json('POST', '/v1/instances', body);
  }

  async unregister(id: string): Promise<void> {
    await this.json('DELETE', `/v1/instances/${encodeURIComponent(id)}`);
  }

  keys(): Promise<ApiKeysResponse> {
    return this.json('GET', '/debug/keys');
  }

  createKey(body: Record<string, unknown>): Promise<ApiKeyCreated> {
    return this.json('POST', '/v1/keys', body);
  }

  async revokeKey(id: string): Promise<void> {
    await this.json('DELETE', `/v1/keys/${encodeURIComponent(id)}`);
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.send(method, path, body, true);
    if (res.status < 200 || res.status >= 300) throw this.failure(method, path, res.status, res.body);
    if (res.body === undefined) throw new CliError(`${method} ${this.conn.url}${path} answered ${res.status} without a JSON body`);
    return res.body as T;
  }

  private async send(method: string, path: string, body: unknown, auth: boolean): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (auth && this.conn.token) headers.authorization = `Bearer ${this.conn.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    let res: Response;
    try {
      res = await fetch(this.conn.url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: this.signal ? AbortSignal.any([this.signal, timeout]) : timeout,
      });
    } catch (err) {
      if (this.signal?.aborted) throw err;
      if (timeout.aborted) throw new CliError(`the control plane at ${this.conn.url} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`);
      throw new CliError(`cannot reach the control plane at ${this.conn.url} (${networkReason(err)}); is it running? (set CONTROL_PLANE_URL or --url)`);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed };
  }

  private failure(method: string, path: string, status: number, body: unknown): CliError {
    if (status === 401) {
      return new CliError(
        this.conn.token
          ? `the control plane at ${this.conn.url} refused the admin token (401); check ADMIN_TOKEN or --token`
          : `the control plane at ${this.conn.url} needs an admin token (401); set ADMIN_TOKEN or pass --token`,
      );
    }
    const message = (body as { error?: { message?: unknown } } | undefined)?.error?.message;
    const said = typeof message === 'string' ? message : (body as { message?: unknown } | undefined)?.message;
    return new CliError(`${method} ${path} failed with ${status}${typeof said === 'string' ? `: ${said}` : ''}`);
  }
}

/** undici hides the socket error in `cause` (ECONNREFUSED, ENOTFOUND …). */
function networkReason(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}
