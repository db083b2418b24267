import { MemoryLoadStore } from '@switchyard/load-store';
import { loadProxyConfig } from './proxy-config';
import { ProxyRuntime } from './proxy-runtime';

const reg = (id: string) => ({ instance_id: id, url: `http://127.0.0.1:1/${id}`, models: ['m'], endpoints: ['/v1/chat/completions'], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 60 });

describe('ProxyRuntime: instances gone from the registry', () => {
  it('drops their metric series and request counters at the second pull that misses them, and keeps the others', async () => {
    const store = new MemoryLoadStore();
    for (const id of ['a', 'b']) await store.register(reg(id));
    const rt = new ProxyRuntime(loadProxyConfig({ LOG_LEVEL: 'silent' }), store);
    await rt.pullRegistry();
    for (const id of ['a', 'b']) {
      rt.metrics.countSelection('least_load', id);
      rt.metrics.series('m', true).instance(id).requests('2xx').inc();
      rt.metrics.series('m', true).instance(id).prompt.inc(5);
      rt.stats.record({ instanceId: id, status: 200, startedAt: 0, firstTokenAt: null });
    }
    const series = async () => (await rt.metrics.registry.metrics()).split('\n').filter((l) => l.includes('instance_id="a"'));
    expect(await series()).toHaveLength(4);

    await store.remove('a');
    await rt.pullRegistry();
    // One pull may lag a registration: nothing goes yet.
    expect(await series()).toHaveLength(4);
    await rt.pullRegistry();
    expect(await series()).toEqual([]);
    expect(Object.keys(rt.stats.snapshot() ?? {})).toEqual(['b']);
    expect((await rt.metrics.registry.metrics()).split('\n').filter((l) => l.includes('instance_id="b"'))).toHaveLength(4);
    // Back again: counted from zero as a new series.
    await store.register(reg('a'));
    await rt.pullRegistry();
    rt.metrics.countSelection('least_load', 'a');
    expect(await series()).toEqual(['switchyard_proxy_selections_total{strategy="least_load",instance_id="a"} 1']);
  });
});
