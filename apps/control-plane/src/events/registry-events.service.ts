import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { ClientProxy } from '@nestjs/microservices';
import { publicRecord, REGISTRY_SNAPSHOT_EVENT, RegistrySnapshotEvent } from '@switchyard/contracts';
import type { LoadStore } from '@switchyard/load-store';
import { lastValueFrom } from 'rxjs';
import { LOAD_STORE } from '../common/tokens';

export const REGISTRY_EVENTS_CLIENT = 'REGISTRY_EVENTS_CLIENT';
/** Snapshots are at-most-once, so they are also republished on a timer for proxies that missed one. */
const RESYNC_INTERVAL_MS = 5000;

@Injectable()
export class RegistryEventsService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('registry-events');
  private timer?: NodeJS.Timeout;
  private failing = false;

  constructor(
    @Optional() @Inject(REGISTRY_EVENTS_CLIENT) private readonly client: ClientProxy | null,
    @Inject(LOAD_STORE) private readonly store: LoadStore,
  ) {}

  onModuleInit(): void {
    if (!this.client) return;
    this.timer = setInterval(() => void this.publish(), RESYNC_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
    void this.client?.close();
  }

  /** Publishes the full, versioned registry; a failure is logged, never surfaced to the API caller. */
  async publish(): Promise<void> {
    if (!this.client) return;
    try {
      const read = await this.store.snapshot();
      // Events travel on a pub/sub channel anyone with Redis access can hear: instance keys stay out; proxies pull them from the store.
      const snapshot: RegistrySnapshotEvent = { ...read, instances: read.instances.map((r) => (r.api_key === undefined ? r : { ...publicRecord(r), has_api_key: true })) };
      await lastValueFrom(this.client.emit(REGISTRY_SNAPSHOT_EVENT, snapshot), { defaultValue: undefined });
      if (this.failing) this.logger.log('registry events flowing again');
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.logger.warn(`cannot publish registry snapshot: ${(err as Error).message}`);
      this.failing = true;
    }
  }
}
