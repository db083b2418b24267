import { parseWrkOutput, wrkScript } from './wrk';

describe('wrk', () => {
  it('reads the summary line of the done hook, latencies from µs to ms', () => {
    const out = `Running 2s test @ http://127.0.0.1:1/v1/chat/completions
  1 threads and 32 connections
WRK_JSON {"requests":20000,"duration_us":2000000,"p50":1250,"p90":2000,"p99":7300,"mean":1400.5,"connect":0,"read":1,"write":0,"timeout":2,"status":3}
Requests/sec:  10000.00
`;
    expect(parseWrkOutput(out)).toEqual({ requests: 20000, durationS: 2, rps: 10000, p50Ms: 1.25, p90Ms: 2, p99Ms: 7.3, meanMs: 1.4005, errors: 6 });
  });

  it('fails loudly when wrk printed no summary', () => {
    expect(() => parseWrkOutput('unable to connect to 127.0.0.1:1 Connection refused')).toThrow('no summary');
  });

  it('posts the body as a quoted Lua string', () => {
    const script = wrkScript('{"model":"m","x":"a\\"b"}');
    expect(script).toContain('wrk.method = "POST"');
    expect(script).toContain('wrk.body = "{\\"model\\":\\"m\\",\\"x\\":\\"a\\\\\\"b\\"}"');
  });
});
