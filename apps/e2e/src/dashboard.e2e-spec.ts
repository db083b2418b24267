// The callbacks given to page.evaluate run in the browser, so this file also needs the DOM types.
/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, BrowserContext, Page } from 'playwright-core';
import { emptyInstanceStats, InstanceLoadsResponse, InstanceLoadView, InstanceStats, TTFT_BUCKETS_MS } from '@switchyard/contracts';
import { RedisLoadStore } from '@switchyard/load-store';
import { freePort, RedisServer } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(90_000);

const CHROMIUM = '/usr/bin/chromium';
const HAS_CHROMIUM = existsSync(CHROMIUM);
/** Set to a path (e.g. docs/dashboard.png) to save a screenshot of the loaded dashboard there. */
const SCREENSHOT = process.env.DASHBOARD_SCREENSHOT;

const TOKEN = 'dash-secret';
const PROXY_A = 'proxy-a@1';
const PROXY_B = 'proxy-b@1';

/** The fleet on screen: [id, models, max_inflight, heartbeat]; no heartbeat values means unknown ('-'). */
const FLEET: [string, string[], number | null, { qps_1m?: number; gpu_util?: number }][] = [
  ['vllm-a100-0', ['llama-3-70b'], 8, { qps_1m: 4.2, gpu_util: 87 }],
  ['vllm-a100-1', ['llama-3-70b'], 8, { qps_1m: 3.9, gpu_util: 81 }],
  ['vllm-h100-0', ['llama-3-70b', 'mixtral-8x7b'], 16, { qps_1m: 9.1, gpu_util: 64 }],
  ['sglang-l4-0', ['qwen2-7b'], null, {}],
  ['tgi-l4-1', ['qwen2-7b'], null, { qps_1m: 0, gpu_util: 0 }],
];

const redis = new RedisServer();
let cp: AppProcess;
let base = '';
let proxy: RedisLoadStore;
let context: BrowserContext;
let page: Page;
let userDataDir = '';
let heartbeats: NodeJS.Timeout | undefined;
const pageErrors: string[] = [];

async function admin(method: string, url: string, body?: unknown): Promise<number> {
  const res = await fetch(base + url, {
    method,
    headers: body === undefined ? { authorization: `Bearer ${TOKEN}` } : { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

async function eventually<T>(what: string, check: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(value)}`);
    await sleep(100);
  }
}

interface RowView {
  cells: string[];
  /** The in-flight count, and the label of the bar's scale ('' when against max_inflight). */
  count: string;
  scale: string;
  fill: number;
  /** Hover texts of the instance cell and the sparkline. */
  title: string;
  spark: string;
}

/** What the operator sees in an instance's row: cell texts, and the bar's drawn width over its track. */
function row(id: string, on: Page = page): Promise<RowView | null> {
  return on.evaluate((instanceId) => {
    const tr = [...document.querySelectorAll<HTMLTableRowElement>('#instances tbody tr')].find((r) => r.dataset.instance === instanceId);
    if (!tr || tr.offsetParent === null) return null;
    const bar = tr.querySelector('.bar')!.getBoundingClientRect().width;
    const track = tr.querySelector('.track')!.getBoundingClientRect().width;
    return {
      cells: [...tr.cells].map((c) => (c.textContent ?? '').trim()),
      count: tr.querySelector('.count')!.textContent ?? '',
      scale: tr.querySelector('.scale')!.textContent ?? '',
      fill: bar / track,
      title: tr.cells[0].title,
      spark: tr.cells[3].title,
    };
  }, id);
}

/** The groups on screen, in order, each with its instances. */
function groups(on: Page = page): Promise<[string, string[]][]> {
  return on.evaluate(() => {
    const out: [string, string[]][] = [];
    for (const tr of document.querySelectorAll<HTMLTableRowElement>('#instances tbody tr')) {
      if (tr.dataset.group !== undefined) out.push([tr.dataset.group, []]);
      else out[out.length - 1][1].push(tr.dataset.instance!);
    }
    return out;
  });
}

/** Counters as a proxy writes them with its lease: `fast` requests with a first token within 100 ms. */
function counters(requests: number, errors: number, fast = 0): InstanceStats {
  const s = emptyInstanceStats();
  s.requests = requests;
  s.errors = errors;
  s.ttft_ms[2] = fast;
  return s;
}

const rowCount = () => page.evaluate(() => document.querySelectorAll('#instances tbody tr[data-instance]').length);

/** Records which rows get their in-flight count or bar written, and whether rows are added, removed or moved. */
function watchMutations(): Promise<void> {
  return page.evaluate(() => {
    const tbody = document.querySelector('#instances tbody')!;
    const w = window as unknown as { __touched: string[]; __observer?: MutationObserver };
    w.__observer?.disconnect();
    w.__touched = [];
    for (const tr of tbody.children) (tr as unknown as { __mark: boolean }).__mark = true;
    w.__observer = new MutationObserver((records) => {
      for (const m of records) {
        if (m.target === tbody) {
          w.__touched.push('<rows>');
          continue;
        }
        const node = m.target.nodeType === Node.ELEMENT_NODE ? (m.target as Element) : m.target.parentElement;
        const load = node?.closest('.count, .bar');
        if (load) w.__touched.push(load.closest('tr')!.dataset.instance!);
      }
    });
    w.__observer.observe(tbody, { subtree: true, childList: true, characterData: true, attributes: true });
  });
}

/** Rows touched since watchMutations, and whether every row is still the same DOM node. */
function mutations(): Promise<{ touched: string[]; sameRows: boolean }> {
  return page.evaluate(() => {
    const w = window as unknown as { __touched: string[] };
    const rows = [...document.querySelector('#instances tbody')!.children] as unknown as { __mark?: boolean }[];
    return { touched: [...new Set(w.__touched)], sameRows: rows.every((r) => r.__mark === true) };
  });
}

async function logIn(token: string): Promise<void> {
  await page.locator('#login').waitFor({ state: 'visible' });
  await page.fill('#token', token);
  await page.click('#login button[type=submit]');
}

const suite = HAS_CHROMIUM ? describe : describe.skip;

suite('dashboard in headless Chromium', () => {
  beforeAll(async () => {
    await redis.start();
    const port = await freePort();
    cp = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, ADMIN_TOKEN: TOKEN, INSTANCE_TTL_S: '4' }).start(port);
    base = `http://127.0.0.1:${port}`;
    proxy = new RedisLoadStore({ url: redis.url });
    for (const [id, models, max] of FLEET) {
      expect(await admin('POST', '/v1/instances', { instance_id: id, url: `http://127.0.0.1:${9300 + FLEET.findIndex((f) => f[0] === id)}`, models, ...(max ? { max_inflight: max } : {}) })).toBe(200);
    }
    // Never heartbeats: it shows as expired once the 4 s TTL passes.
    expect(await admin('POST', '/v1/instances', { instance_id: 'vllm-a100-2', url: 'http://127.0.0.1:9310', models: ['llama-3-70b'], max_inflight: 8 })).toBe(200);
    const beat = () => Promise.all(FLEET.map(([id, , , hb]) => admin('POST', `/v1/instances/${id}/heartbeat`, hb)));
    await beat();
    heartbeats = setInterval(() => void beat().catch(() => undefined), 1000);

    userDataDir = mkdtempSync(path.join(os.tmpdir(), 'sy-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 720 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) pageErrors.push(msg.text());
    });
  });

  afterAll(async () => {
    clearInterval(heartbeats);
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await proxy?.close();
    await cp?.stop();
    await redis.stop();
  });

  it('asks for the admin token, refuses a wrong one, then shows every instance', async () => {
    await page.goto(`${base}/dashboard`);
    await logIn('wrong');
    await eventually('the refusal', () => page.textContent('#login-error'), (t) => /refused/.test(t ?? ''));
    expect(await page.isVisible('#board')).toBe(false);

    await logIn(TOKEN);
    await page.locator('#board').waitFor({ state: 'visible' });
    // Columns: instance, state, in flight, last 5 min, req/s, err/s, TTFT p50, qps 1m, gpu, engine, waiting, kv, seen.
    const a0 = await eventually('vllm-a100-0', () => row('vllm-a100-0'), (r) => r !== null);
    expect(a0!.cells.slice(0, 2)).toEqual(['vllm-a100-0', 'alive']);
    expect([a0!.count, a0!.scale, a0!.cells[7], a0!.cells[8]]).toEqual(['0 / 8', '', '4.2', '87%']);
    // The URL and models on hover.
    expect(a0!.title).toBe('http://127.0.0.1:9300\nmodels: llama-3-70b');
    const h0 = (await row('vllm-h100-0'))!;
    expect([h0.count, h0.cells[7], h0.cells[8]]).toEqual(['0 / 16', '9.1', '64%']);
    // Unknown is '-', a measured zero is 0; without max_inflight the bar says what it is measured against.
    const sg = (await row('sglang-l4-0'))!;
    expect([sg.count, sg.scale, sg.cells[7], sg.cells[8]]).toEqual(['0', 'of fleet max 1', '-', '-']);
    expect((await row('tgi-l4-1'))!.cells.slice(7, 9)).toEqual(['0', '0%']);
    // Grouped by the models served, groups and members in name order.
    expect(await groups()).toEqual([
      ['llama-3-70b', ['vllm-a100-0', 'vllm-a100-1', 'vllm-a100-2']],
      ['llama-3-70b, mixtral-8x7b', ['vllm-h100-0']],
      ['qwen2-7b', ['sglang-l4-0', 'tgi-l4-1']],
    ]);
    // No proxy counted a request yet: after two reads the rates are measured zeros, TTFT has no sample.
    const quiet = await eventually('rates after two reads', () => row('vllm-a100-0'), (r) => r?.cells[4] === '0');
    expect(quiet!.cells.slice(4, 7)).toEqual(['0', '0', '—']);
    await eventually('vllm-a100-2 to expire', () => row('vllm-a100-2'), (r) => r?.cells[1] === 'expired');
    expect(await page.textContent('#s-alive')).toBe('5');
  });

  it('keeps the token for this tab only', async () => {
    expect(await page.evaluate(() => ({ session: sessionStorage.length, local: localStorage.length }))).toEqual({ session: 1, local: 0 });
    await page.reload();
    await page.locator('#board').waitFor({ state: 'visible' });
    expect(await page.isVisible('#login')).toBe(false);

    const other = await context.newPage();
    await other.goto(`${base}/dashboard`);
    await other.locator('#login').waitFor({ state: 'visible' });
    expect(await other.isVisible('#board')).toBe(false);
    await other.close();
  });

  it('grows the in-flight bar while a proxy holds slots and shrinks it on release, touching only that row', async () => {
    await eventually('vllm-h100-0', () => row('vllm-h100-0'), (r) => r?.count === '0 / 16');
    await watchMutations();
    await proxy.renewLease({ proxy_id: PROXY_A, inflight_http: 12, queued: {}, draining: false, degraded: false }, 60_000);
    for (let k = 0; k < 12; k++) expect(await proxy.acquire({ proxyId: PROXY_A, model: 'mixtral-8x7b', strategy: 'least_load' })).toMatchObject({ kind: 'acquired' });

    const held = await eventually('the bar at 12 of 16', () => row('vllm-h100-0'), (r) => r?.count === '12 / 16' && Math.abs(r.fill - 0.75) < 0.02);
    expect(held!.fill).toBeGreaterThan(0.7);
    const proxyRow = await eventually('the proxy row', () => page.evaluate(() => document.querySelector('#proxies tbody tr')?.textContent ?? ''), (t) => t.includes(PROXY_A));
    expect(proxyRow).toContain('12');
    expect(await mutations()).toEqual({ touched: ['vllm-h100-0'], sameRows: true });

    for (let k = 0; k < 12; k++) await proxy.release(PROXY_A, 'vllm-h100-0');
    await eventually('the bar back to empty', () => row('vllm-h100-0'), (r) => r?.count === '0 / 16' && r.fill < 0.01);
    expect(await mutations()).toEqual({ touched: ['vllm-h100-0'], sameRows: true });
  });

  it('shows a loaded fleet with the rates proxies count, the no-max bar against the fleet maximum (and saves the screenshot when asked)', async () => {
    const leaseA = { proxy_id: PROXY_A, inflight_http: 11, queued: { 'llama-3-70b': 2 }, draining: false, degraded: false };
    const leaseB = { proxy_id: PROXY_B, inflight_http: 7, queued: {}, draining: true, degraded: false };
    await proxy.renewLease(leaseA, 60_000, { 'vllm-a100-0': counters(100, 0, 80), 'sglang-l4-0': counters(10, 0) });
    await proxy.renewLease(leaseB, 60_000, { 'vllm-a100-0': counters(50, 0, 40) });
    for (let k = 0; k < 18; k++) await proxy.acquire({ proxyId: k % 2 ? PROXY_A : PROXY_B, model: 'llama-3-70b', strategy: 'least_load' });
    for (let k = 0; k < 3; k++) await proxy.acquire({ proxyId: PROXY_A, model: 'qwen2-7b', strategy: 'round_robin' });
    const total = await eventually('21 in flight', () => page.textContent('#s-inflight'), (t) => t === '21');
    expect(total).toBe('21');
    expect(await page.textContent('#s-proxies')).toBe('2');
    expect(await page.textContent('#s-queued')).toBe('2');
    const draining = await page.evaluate((id) => [...document.querySelectorAll<HTMLTableRowElement>('#proxies tbody tr')].find((r) => r.dataset.proxy === id)?.cells[1].textContent, PROXY_B);
    expect(draining).toBe('draining');

    // The proxies count on: the page turns the counters' increase into rates and a TTFT p50 (within 100 ms here).
    await proxy.renewLease(leaseA, 60_000, { 'vllm-a100-0': counters(160, 2, 120), 'sglang-l4-0': counters(25, 1) });
    await proxy.renewLease(leaseB, 60_000, { 'vllm-a100-0': counters(90, 1, 70) });
    const busy = await eventually('vllm-a100-0 rates', () => row('vllm-a100-0'), (r) => Number(r?.cells[4]) > 0 && Number(r?.cells[5]) > 0 && r?.cells[6] !== '—');
    expect(busy!.cells[6]).toMatch(/^\d+ ms$/);
    expect(Number(busy!.cells[6].split(' ')[0])).toBeLessThanOrEqual(100);
    const sg = await eventually('sglang-l4-0 rates', () => row('sglang-l4-0'), (r) => Number(r?.cells[4]) > 0);
    // Requests but no first token counted (the proxy did not measure it yet): no TTFT, not a zero.
    expect(sg!.cells[6]).toBe('—');
    // No max_inflight: its bar is its count over the fleet's largest in flight of the last minutes (12, from the test before), labelled so.
    const peak = Number(/^of fleet max (\d+)$/.exec(sg!.scale)?.[1]);
    expect(peak).toBeGreaterThanOrEqual(12);
    expect(sg!.fill).toBeCloseTo(Number(sg!.count) / peak, 1);
    expect(sg!.fill).toBeLessThan(0.5);
    const group = await page.evaluate(() => document.querySelector<HTMLTableRowElement>('#instances tr[data-group="llama-3-70b"]')!.textContent);
    expect(group).toMatch(/^llama-3-70b3 instances · \d+ in flight · [\d.]+ req\/s · [\d.]+ err\/s$/);
    if (SCREENSHOT) {
      // Some history for the sparklines: the load moves for a few seconds.
      for (let k = 0; k < 8; k++) {
        await sleep(1000);
        if (k % 2) for (let j = 0; j < 3; j++) await proxy.acquire({ proxyId: PROXY_A, model: 'llama-3-70b', strategy: 'least_load' });
        else await proxy.release(PROXY_B, 'vllm-a100-1');
        await proxy.renewLease(leaseA, 60_000, { 'vllm-a100-0': counters(160 + 9 * k, 2, 120 + 8 * k), 'vllm-a100-1': counters(40 + 7 * k, 0, 30 + 6 * k), 'sglang-l4-0': counters(25 + 2 * k, 1) });
      }
      await sleep(500); // let the bars' short transition finish before the picture
      await page.screenshot({ path: path.resolve(__dirname, '../../..', SCREENSHOT), fullPage: true });
    }
  });

  it('computes req/s, err/s and the TTFT p50 over the last minute from successive reads, and keeps 5 min of in flight per instance', async () => {
    // A page of its own whose reads the test serves, so the times between reads are exact.
    const T0 = Date.UTC(2030, 0, 1);
    const instance = (id: string, models: string[], max: number | null, inflight: number, stats: InstanceStats): InstanceLoadView => ({
      instance_id: id, url: `http://10.0.0.1:8000/${id}`, models, alive: true, is_alive: true, weight: 1, max_inflight: max, inflight, inflight_by_proxy: {}, qps_1m: null, gpu_util: null,
      last_seen_at: new Date(T0).toISOString(), queued_by_proxy: {}, engine: { engine: 'vllm', running: null, waiting: null, kv_cache_usage: null, scraped_at: null, scrape_error: null }, stats,
    });
    const read = (atS: number, x: InstanceLoadView, y: InstanceLoadView) =>
      ({ generated_at: new Date(T0 + atS * 1000).toISOString(), metric_source: {}, null_semantics: '', ttft_buckets_ms: TTFT_BUCKETS_MS, instances: [x, y], proxies: [] }) as unknown as InstanceLoadsResponse;
    const slow = (n: number) => {
      const s = emptyInstanceStats();
      s.ttft_ms[3] = n; // (100, 200] ms
      return s;
    };
    const withStats = (requests: number, errors: number, ttft: InstanceStats) => ({ ...ttft, requests, errors });
    let current = read(0, instance('x-0', ['m-x'], 4, 1, withStats(100, 0, emptyInstanceStats())), instance('y-0', ['m-y'], null, 12, emptyInstanceStats()));
    const served = await context.newPage();
    try {
      await served.route('**/debug/instance_loads*', (route) => route.fulfill({ json: current }));
      await served.goto(`${base}/dashboard`);
      await served.locator('#board').waitFor({ state: 'visible' });
      const first = await eventually('the first read', () => row('x-0', served), (r) => r !== null);
      // One read: no rate yet.
      expect(first!.cells.slice(4, 7)).toEqual(['—', '—', '—']);

      // 10 s later: 60 more requests, 3 errors, 20 first tokens in (100, 200] ms: the median is halfway, 150 ms.
      current = read(10, instance('x-0', ['m-x'], 4, 3, withStats(160, 3, slow(20))), instance('y-0', ['m-y'], null, 3, emptyInstanceStats()));
      const x = await eventually('rates over 10 s', () => row('x-0', served), (r) => r?.cells[4] !== '—');
      expect(x!.cells.slice(4, 7)).toEqual(['6', '0.3', '150 ms']);
      expect(x!.spark).toBe('in flight over the last 1 min: now 3, max 3');
      // The bar moves with a short transition: wait for it to settle.
      const y = (await eventually('y-0 at 3 of 12', () => row('y-0', served), (r) => Math.abs((r?.fill ?? 0) - 0.25) < 0.02))!;
      expect([y.count, y.scale, y.spark]).toEqual(['3', 'of fleet max 12', 'in flight over the last 1 min: now 3, max 12']);

      // A proxy left with its share (the sums go down): that step counts as no increase, not as negative.
      current = read(30, instance('x-0', ['m-x'], 4, 3, withStats(100, 0, emptyInstanceStats())), instance('y-0', ['m-y'], null, 3, emptyInstanceStats()));
      expect((await eventually('rates over 30 s', () => row('x-0', served), (r) => r?.cells[4] !== '6'))!.cells.slice(4, 7)).toEqual(['2', '0.1', '150 ms']);

      // At 75 s the reads before 15 s have left the minute: nothing more happened since, so 0 and no TTFT.
      current = read(75, instance('x-0', ['m-x'], 4, 0, withStats(100, 0, emptyInstanceStats())), instance('y-0', ['m-y'], null, 0, emptyInstanceStats()));
      expect((await eventually('rates over the last minute', () => row('x-0', served), (r) => r?.cells[4] !== '2'))!.cells.slice(4, 7)).toEqual(['0', '0', '—']);
      expect(await groups(served)).toEqual([
        ['m-x', ['x-0']],
        ['m-y', ['y-0']],
      ]);
    } finally {
      await served.close();
    }
  });

  it('handles 200 more instances as keyed rows: one changed count touches one row', async () => {
    const ids = Array.from({ length: 200 }, (_, k) => `bulk-${String(k).padStart(3, '0')}`);
    for (let k = 0; k < ids.length; k += 25) {
      const statuses = await Promise.all(ids.slice(k, k + 25).map((id, j) => admin('POST', '/v1/instances', { instance_id: id, url: `http://127.0.0.1:${10_000 + k + j}`, models: [id], max_inflight: 4 })));
      expect(statuses.every((s) => s === 200)).toBe(true);
    }
    await eventually('206 rows', rowCount, (n) => n === 206);
    // A poll or two so every row has been drawn before counting writes.
    await sleep(1200);
    await watchMutations();
    // The bulk never heartbeats and may have expired by now; a proxy only picks an alive one. Nothing
    // listens at its URL, so a probe can take it down again between the heartbeat and the acquire: retry.
    const acquired = await eventually(
      'bulk-123 acquired',
      async () => {
        expect(await admin('POST', '/v1/instances/bulk-123/heartbeat', {})).toBe(200);
        return proxy.acquire({ proxyId: PROXY_A, model: 'bulk-123', strategy: 'least_load' });
      },
      (r) => r.kind === 'acquired',
    );
    expect(acquired).toMatchObject({ kind: 'acquired', instance_id: 'bulk-123' });
    await eventually('bulk-123 at 1 of 4', () => row('bulk-123'), (r) => r?.count === '1 / 4' && Math.abs(r.fill - 0.25) < 0.02);
    expect(await mutations()).toEqual({ touched: ['bulk-123'], sameRows: true });
    expect(await rowCount()).toBe(206);

    // Removing one removes exactly its row.
    expect(await admin('DELETE', '/v1/instances/bulk-007')).toBe(200);
    await eventually('bulk-007 gone', () => row('bulk-007'), (r) => r === null);
    expect(await rowCount()).toBe(205);
    expect(pageErrors).toEqual([]);
  });
});

if (!HAS_CHROMIUM) {
  describe('dashboard in headless Chromium', () => {
    it.skip(`[SKIPPED: ${CHROMIUM} is not installed; apt-get install -y chromium]`, () => undefined);
  });
}
