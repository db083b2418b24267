import { formatZodError, heartbeatIntervalS, heartbeatSchema, instanceRegistrationSchema, publicRecord, toInstanceRecord, toInstanceView, UNKNOWN_ENGINE, INFLIGHT_REJECTED_MESSAGE } from './index';

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

describe('registration url and endpoints', () => {
  const fails = (body: Record<string, unknown>) => {
    const r = instanceRegistrationSchema.safeParse({ models: ['m'], ...body });
    return r.success ? '' : formatZodError(r.error);
  };
  it.each([
    ['a query', 'http://h:1/?api-version=1', /^url: must not have a query or a fragment/],
    ['an empty query', 'http://h:1?', /^url: must not have a query or a fragment/],
    ['a fragment', 'http://h:1/#x', /^url: must not have a query or a fragment/],
    ['an empty fragment', 'http://h:1#', /^url: must not have a query or a fragment/],
    ['credentials', 'http://user:pw@h:1', /^url: must not carry credentials/],
    ['an empty user', 'http://@h:1', /^url: must not carry credentials/],
    ['a space', 'http://h:1/ v1', /^url: must be printable ASCII/],
    ['a newline', 'http://h:1/\nx', /^url: must be printable ASCII/],
  ])('refuses a url with %s, naming url', (_what, url, message) => {
    expect(fails({ url })).toMatch(message);
  });
  it('keeps a path prefix (an instance behind an ingress)', () => {
    expect(toInstanceRecord(instanceRegistrationSchema.parse({ url: 'https://gw.example/team-a/', models: ['m'] }), 30, 0).url).toBe('https://gw.example/team-a');
  });
  it('takes endpoints as plain paths, each once, at least one', () => {
    expect(instanceRegistrationSchema.parse({ url: 'http://h:1', models: ['m'], endpoints: ['/v1/chat/completions', '/v1/rerank', '/rerank'] }).endpoints).toHaveLength(3);
    expect(fails({ url: 'http://h:1', endpoints: [] })).toMatch(/^endpoints: must list at least one route/);
    expect(fails({ url: 'http://h:1', endpoints: ['/v1/embeddings', '/v1/embeddings'] })).toMatch(/^endpoints\.1: \/v1\/embeddings listed twice/);
    for (const bad of ['v1/chat', '/v1/chat?x=1', '/v1/../admin', '/v1//chat', '/', '/v1/chat/', '/v1/ chat', '/v1/%2e%2e']) {
      expect([bad, fails({ url: 'http://h:1', endpoints: [bad] })]).toEqual([bad, expect.stringMatching(/^endpoints\.0: must be a path like/)]);
    }
  });
});

describe('bounded registration input', () => {
  const issue = (body: Record<string, unknown>) => {
    const r = instanceRegistrationSchema.safeParse({ url: 'http://h:1', models: ['m'], ...body });
    return r.success ? '' : formatZodError(r.error);
  };
  it('takes names engines use and names that are object keys', () => {
    const models = ['meta-llama/Llama-3.1-8B-Instruct', 'llama3:8b', '/models/q4_K_M.gguf', 'a+b=c~d@e', 'constructor', '__proto__', 'toString'];
    expect(instanceRegistrationSchema.parse({ url: 'http://h:1', models, tags: ['zone:eu-west', 'gpu=a100'] }).models).toEqual(models);
  });
  it('bounds meta by depth and size', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 8; i++) deep = { a: deep };
    expect(issue({ meta: deep })).toBe('');
    expect(issue({ meta: { a: deep } })).toMatch(/^meta: must nest at most 8 levels/);
    expect(issue({ meta: { list: [[[[[[[[1]]]]]]]] } })).toMatch(/^meta: must nest at most 8 levels/);
    expect(issue({ meta: { s: 'x'.repeat(16 * 1024) } })).toMatch(/^meta: must be at most 16384 bytes/);
  });
  it('derives an IPv6 id with brackets, and refuses a derived id that would not fit', () => {
    expect(toInstanceRecord(instanceRegistrationSchema.parse({ url: 'http://[fd00::1]:8000', models: ['m'] }), 30, 0).instance_id).toBe('hp_[fd00::1]:8000');
    expect(issue({ url: `http://${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.d:8000` })).toMatch(/^url: the id derived from it/);
    expect(issue({ url: undefined, host: 'h'.repeat(200), port: 1 })).toMatch(/^host: the id derived from it/);
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

describe('instance api_key', () => {
  it('is kept in the record, never in the view or a public record, and must be header-safe (the message never echoes it)', () => {
    const rec = toInstanceRecord(instanceRegistrationSchema.parse({ url: 'http://h:1', models: ['m'], api_key: 'sk-secret' }), 30, 0);
    expect(rec.api_key).toBe('sk-secret');
    const state = { ...rec, last_seen_at: 0, is_alive: true, load: { inflight: 0, qps_1m: null, gpu_util: null }, inflight_by_proxy: {}, engine: UNKNOWN_ENGINE, saturated: false };
    expect(JSON.stringify(toInstanceView(state))).not.toContain('sk-secret');
    expect(JSON.stringify(publicRecord(rec))).not.toContain('sk-secret');
    const bad = instanceRegistrationSchema.safeParse({ url: 'http://h:1', models: ['m'], api_key: 'sk secret\r\nx: y' });
    expect(bad.success).toBe(false);
    expect(formatZodError(bad.error!)).toBe('api_key: must be printable ASCII without spaces');
  });
});
