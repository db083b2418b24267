import { formatZodError, heartbeatIntervalS, heartbeatSchema, instanceRegistrationSchema, toInstanceRecord, INFLIGHT_REJECTED_MESSAGE } from './index';

describe('instance registration schema', () => {
  it('applies defaults and derives the id from host and port', () => {
    const reg = instanceRegistrationSchema.parse({ host: '10.0.0.5', port: 8000, models: ['llama'] });
    const rec = toInstanceRecord(reg, 30, 1000);
    expect(rec).toMatchObject({ instance_id: 'hp_10.0.0.5:8000', url: 'http://10.0.0.5:8000', weight: 1, tags: [], meta: {}, max_inflight: null });
  });
  it('derives the id from a URL', () => {
    const rec = toInstanceRecord(instanceRegistrationSchema.parse({ url: 'https://gpu1.example/', models: ['m'] }), 30, 0);
    expect(rec.instance_id).toBe('hp_gpu1.example:443');
    expect(rec.url).toBe('https://gpu1.example');
  });
  it('rejects a non-http scheme, naming the field', () => {
    const r = instanceRegistrationSchema.safeParse({ url: 'ftp://x:1', models: ['m'] });
    expect(r.success).toBe(false);
    if (!r.success) expect(formatZodError(r.error)).toMatch(/^url: scheme must be http or https/);
  });
  it('rejects missing models and unknown fields by name', () => {
    const r = instanceRegistrationSchema.safeParse({ url: 'http://x:1', models: [], colour: 'red' });
    expect(r.success).toBe(false);
    if (!r.success) {
      const msg = formatZodError(r.error);
      expect(msg).toContain('models');
      expect(msg).toContain('colour: unknown field');
    }
  });
  it('needs url or host+port', () => {
    const r = instanceRegistrationSchema.safeParse({ host: 'h', models: ['m'] });
    expect(r.success).toBe(false);
    if (!r.success) expect(formatZodError(r.error)).toContain('port');
  });
});

describe('heartbeat schema', () => {
  it('rejects inflight', () => {
    const r = heartbeatSchema.safeParse({ inflight: 3 });
    expect(r.success).toBe(false);
    expect(INFLIGHT_REJECTED_MESSAGE).toMatch(/counted by the proxies/);
  });
  it('bounds gpu_util and qps_1m', () => {
    expect(heartbeatSchema.safeParse({ gpu_util: 101 }).success).toBe(false);
    expect(heartbeatSchema.safeParse({ qps_1m: -1 }).success).toBe(false);
    expect(heartbeatSchema.parse({ qps_1m: 0, gpu_util: 100 })).toEqual({ qps_1m: 0, gpu_util: 100 });
  });
  it('spaces heartbeats at a third of the TTL, between 1 and 10 s', () => {
    expect(heartbeatIntervalS(30)).toBe(10);
    expect(heartbeatIntervalS(60)).toBe(10);
    expect(heartbeatIntervalS(9)).toBe(3);
    expect(heartbeatIntervalS(2)).toBe(1);
  });
});
