import type { ClientProxy } from '@nestjs/microservices';
import { of } from 'rxjs';
import type { RegistrySnapshotEvent } from '@switchyard/contracts';
import { MemoryLoadStore } from '@switchyard/load-store';
import { RegistryEventsService } from './registry-events.service';

const rec = (id: string, extra: Record<string, unknown> = {}) => ({ instance_id: id, url: `http://${id}:8000`, models: ['m'], endpoints: ['/v1/chat/completions'], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30, ...extra });

describe('RegistryEventsService', () => {
  it("publishes every record without its api_key, saying only that it has one", async () => {
    const store = new MemoryLoadStore();
    await store.register(rec('keyed', { api_key: 'sk-never-published' }));
    await store.register(rec('plain'));
    const emitted: unknown[] = [];
    const client = { emit: (_pattern: string, data: unknown) => (emitted.push(data), of(undefined)), close: async () => undefined } as unknown as ClientProxy;
    await new RegistryEventsService(client, store).publish();
    expect(JSON.stringify(emitted)).not.toContain('sk-never-published');
    const [snapshot] = emitted as RegistrySnapshotEvent[];
    expect(snapshot.instances.map((i) => [i.instance_id, i.has_api_key, 'api_key' in i])).toEqual([
      ['keyed', true, false],
      ['plain', undefined, false],
    ]);
  });
});
