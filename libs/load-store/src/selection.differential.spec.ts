import { RedisServer } from '@switchyard/testing';
import { STRATEGIES } from '@switchyard/routing';
import { record } from './load-store.contract';
import type { LoadStore } from './load-store';
import { MemoryLoadStore } from './memory-load-store';
import { RedisLoadStore } from './redis-load-store';

/** Deterministic PRNG (mulberry32), so a failing seed replays. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const server = new RedisServer();
beforeAll(() => server.start());
afterAll(() => server.stop());

// The Lua index and libs/routing pick() (behind the memory store) must agree pick for pick
// through any mix of loads, weights, caps, engine signals, exclusions and liveness changes.
describe('selection: Redis index and routing pick() agree pick for pick', () => {
  for (const seed of Array.from({ length: 40 }, (_, i) => i + 1)) {
    it(`seed ${seed}`, async () => {
      const draws = prng(seed * 7919);
      const randomFor = () => {
        const shared = prng(seed);
        return shared;
      };
      const memory = new MemoryLoadStore({ random: randomFor() });
      const redis = new RedisLoadStore({ url: server.url, pool: `diff${seed}`, random: randomFor() });
      const stores: LoadStore[] = [memory, redis];
      const ids = ['a', 'B', 'c-1', 'd', 'e:2', 'f', 'g@x', 'h'];
      const int = (n: number) => Math.floor(draws() * n);
      const pickOf = <T>(xs: readonly T[]) => xs[int(xs.length)];
      const trail: string[] = [];
      const both = async <T>(f: (s: LoadStore) => Promise<T>, what = '') => {
        const [m, r] = [await f(memory), await f(redis)];
        trail.push(`${what} -> ${JSON.stringify(m)}`);
        if (JSON.stringify(r) !== JSON.stringify(m)) {
          const state = (await memory.listInstances()).map((i) => `${i.instance_id} n=${i.load.inflight} w=${i.weight} max=${i.max_inflight} alive=${i.is_alive} sat=${i.saturated} wait=${i.engine.waiting} qps=${i.load.qps_1m} models=${i.models}`);
          throw new Error(`redis ${JSON.stringify(r)} != memory ${JSON.stringify(m)}\n${trail.slice(-12).join('\n')}\n${state.join('\n')}`);
        }
        return m;
      };
      try {
        for (const id of ids) {
          const weight = pickOf([1, 1, 2, 3, 0.5]);
          const max_inflight = pickOf([null, null, 2, 4]);
          const models = pickOf([['m'], ['m', 'n']]);
          await both((s) => s.register(record(id, { weight, max_inflight, models })).then((r) => r.created), `register ${id}`);
        }
        const held: [string, string][] = [];
        for (let step = 0; step < 400; step++) {
          const op = draws();
          if (op < 0.5) {
            const strategy = pickOf(STRATEGIES);
            const exclude = draws() < 0.3 ? [pickOf(ids), pickOf(ids)] : undefined;
            const proxyId = pickOf(['p1', 'p2']);
            const model = pickOf(['m', 'm', 'n']);
            const r = await both((s) => s.acquire({ proxyId, model, strategy, ...(exclude ? { exclude } : {}) }), `acquire ${model} ${strategy} ${exclude}`);
            if (r.kind === 'acquired') held.push([proxyId, r.instance_id]);
          } else if (op < 0.75 && held.length > 0) {
            const [proxyId, id] = held.splice(int(held.length), 1)[0];
            await both((s) => s.release(proxyId, id), `release ${id}`);
          } else if (op < 0.85) {
            const id = pickOf(ids);
            const waiting = pickOf([null, 0, 1, 2, 5]);
            const saturated = draws() < 0.25;
            await both((s) => s.reportEngine(id, { engine: 'vllm', running: 1, waiting, kv_cache_usage: saturated ? 0.99 : 0.4, scraped_at: 1, scrape_error: null }, saturated), `engine ${id} ${waiting} ${saturated}`);
          } else if (op < 0.88) {
            // Re-registration moves weight, cap and models under live counts.
            const id = pickOf(ids);
            const weight = pickOf([1, 2, 0.5]);
            const max_inflight = pickOf([null, 1, 3]);
            const models = pickOf([['m'], ['m', 'n'], ['n']]);
            await both((s) => s.register(record(id, { weight, max_inflight, models })).then((r) => [r.created, r.state.load.inflight]), `re-register ${id} ${weight} ${max_inflight} ${models}`);
          } else if (op < 0.92) {
            const id = pickOf(ids);
            const hb = draws() < 0.5 ? { qps_1m: pickOf([0, 1, 2.5, 7]) } : {};
            await both((s) => s.heartbeat(id, hb), `heartbeat ${id} ${JSON.stringify(hb)}`);
          } else {
            const id = pickOf(ids);
            await both((s) => s.markDown(id), `markDown ${id}`);
          }
        }
        const loads = async (s: LoadStore) => (await s.listInstances()).map((i) => [i.instance_id, i.load.inflight, i.is_alive, i.saturated]);
        await both(loads);
      } finally {
        for (const s of stores) await s.close();
      }
    }, 30_000);
  }
});
