import { HttpException, Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { API_KEY_PREFIX, API_KEY_SHOWN_CHARS, ApiKeyCreated, ApiKeyView, errorBody, toApiKeyView } from '@switchyard/contracts';
import type { DeclaredKey } from '@switchyard/config';
import { hashSecret, KeyPut, KeyStore } from '@switchyard/load-store';
import { StoreOutage } from '../common/store-outage';
import type { CreateKeyDto } from './dto/create-key.dto';
import { DECLARED_KEYS, KEY_STORE } from './keys.tokens';

/** Declared keys are written again this often: a store that lost its data gets them back, and a failed first write is retried. */
const DECLARED_RESYNC_MS = 30_000;
const RETRY_MS = 2_000;

const notFound = (id: string) => new HttpException(errorBody(`API key '${id}' does not exist (or was revoked)`, 'not_found_error', 'key_not_found', 'id'), 404);

/**
 * Client API keys: created here (the secret is shown once and only its sha256 is stored),
 * listed without secrets, revoked at once for every proxy (they read the store per request).
 */
@Injectable()
export class KeysService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('keys');
  private timer?: NodeJS.Timeout;

  constructor(
    @Inject(KEY_STORE) private readonly keys: KeyStore,
    @Inject(DECLARED_KEYS) private readonly declared: DeclaredKey[],
    private readonly outage: StoreOutage,
  ) {}

  onModuleInit(): void {
    const run = async () => {
      const ok = await this.writeDeclared().then(
        () => true,
        (err: unknown) => (this.logger.warn(`cannot write the config file's keys yet (${(err as Error).message}); retrying`), false),
      );
      this.timer = setTimeout(() => void run(), ok ? DECLARED_RESYNC_MS : RETRY_MS);
      this.timer.unref();
    };
    void run();
  }

  onApplicationShutdown(): void {
    clearTimeout(this.timer);
  }

  /** The config file's keys, as `cfg_<name>`; config keys no longer in the file are revoked. */
  async writeDeclared(): Promise<void> {
    const wanted = new Set<string>();
    for (const d of this.declared) {
      const id = `cfg_${d.name}`;
      wanted.add(id);
      const sha256 = d.key_sha256 ?? hashSecret(d.key as string);
      const prefix = d.key ? d.key.slice(0, API_KEY_SHOWN_CHARS) : `sha256:${sha256.slice(0, 8)}`;
      const put: KeyPut = { id, name: d.name, prefix, sha256, models: d.models ?? null, rpm: d.rpm ?? null, tpm: d.tpm ?? null, source: 'config' };
      const r = await this.keys.put(put);
      if (r === 'conflict') this.logger.error(`config key ${d.name}: the same secret belongs to another key; not written`);
      else if (r === 'created') this.logger.log(`config key ${id} written to the store`);
    }
    for (const { record } of await this.keys.list()) {
      if (record.source === 'config' && !wanted.has(record.id)) {
        await this.keys.revoke(record.id);
        this.logger.log(`config key ${record.id} is no longer in the config file: revoked`);
      }
    }
  }

  async create(body: CreateKeyDto): Promise<ApiKeyCreated> {
    // 192 random bits, URL-safe: as strong as OpenAI's, and never stored as such.
    const secret = `${API_KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
    const id = `key_${randomBytes(8).toString('hex')}`;
    const put: KeyPut = { id, name: body.name, prefix: secret.slice(0, API_KEY_SHOWN_CHARS), sha256: hashSecret(secret), models: body.models ?? null, rpm: body.rpm ?? null, tpm: body.tpm ?? null, source: 'api' };
    const r = await this.outage.call(() => this.keys.put(put));
    if (r !== 'created') throw new HttpException(errorBody('could not store a new key; retry', 'server_error', 'key_not_created'), 500);
    this.logger.log(`created API key ${id} (${body.name})`);
    const view = await this.get(id);
    return { ...view, key: secret };
  }

  async list(): Promise<ApiKeyView[]> {
    return (await this.outage.call(() => this.keys.list())).map((k) => toApiKeyView(k.record, k.usage));
  }

  async get(id: string): Promise<ApiKeyView> {
    const k = await this.outage.call(() => this.keys.get(id));
    if (!k) throw notFound(id);
    return toApiKeyView(k.record, k.usage);
  }

  async revoke(id: string): Promise<void> {
    const k = await this.outage.call(() => this.keys.get(id));
    if (!k) throw notFound(id);
    if (k.record.source === 'config') {
      throw new HttpException(errorBody(`API key '${id}' is declared in the config file; remove it there (it is revoked when the control plane restarts)`, 'invalid_request_error', 'key_declared', 'id'), 409);
    }
    if (!(await this.outage.call(() => this.keys.revoke(id)))) throw notFound(id);
    this.logger.log(`revoked API key ${id} (${k.record.name})`);
  }
}
