import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { tracingWanted } from './tracing';

const ROOT = path.resolve(__dirname, '../../..');

/** Loads the proxy-core entry in a fresh node, runs startTracing(env), reports whether it is on and which OpenTelemetry modules got loaded. */
function startIn(env: Record<string, string>): { on: boolean; loaded: string[] } {
  const script = `
    const { startTracing } = require('./libs/proxy-core/src/index.ts');
    startTracing(${JSON.stringify(env)}).then(async (t) => {
      const loaded = [...new Set(Object.keys(require.cache).map((k) => (k.match(/node_modules\\/(@opentelemetry\\/[^/]+)/) || [])[1]).filter(Boolean))];
      console.log(JSON.stringify({ on: t !== undefined, loaded }));
      await t?.shutdown();
    });`;
  const r = spawnSync(process.execPath, ['-r', '@swc-node/register', '-e', script], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, OTEL_SDK_DISABLED: '' } });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string) as { on: boolean; loaded: string[] };
}

describe('tracing', () => {
  it('is on only with an OTLP endpoint, and OTEL_SDK_DISABLED wins', () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
  });

  it('off, no OpenTelemetry SDK module is loaded (the whole proxy-core entry included); on, the SDK is', () => {
    // Only the API, which prom-client itself requires (for exemplars) whether tracing is on or not: a no-op without an SDK.
    expect(startIn({})).toEqual({ on: false, loaded: ['@opentelemetry/api'] });
    const on = startIn({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(on.on).toBe(true);
    expect(on.loaded).toEqual(expect.arrayContaining(['@opentelemetry/api', '@opentelemetry/sdk-node']));
  });
});
