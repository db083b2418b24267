import { CliError, DEFAULT_CONTROL_PLANE_URL, parseInvocation } from './args';

const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseInvocation(argv, env);
const failure = (argv: string[], env: NodeJS.ProcessEnv = {}): string => {
  try {
    parse(argv, env);
  } catch (err) {
    expect(err).toBeInstanceOf(CliError);
    return (err as Error).message;
  }
  throw new Error(`parsed: ${argv.join(' ')}`);
};

describe('parseInvocation', () => {
  it('takes the control plane from flags over the environment over the default', () => {
    expect(parse(['status']).connection).toEqual({ url: DEFAULT_CONTROL_PLANE_URL, token: undefined });
    expect(parse(['status'], { CONTROL_PLANE_URL: 'http://cp:9/', ADMIN_TOKEN: 't' }).connection).toEqual({ url: 'http://cp:9', token: 't' });
    expect(parse(['status', '--url', 'https://x', '--token', 'u'], { CONTROL_PLANE_URL: 'http://cp:9', ADMIN_TOKEN: 't' }).connection).toEqual({ url: 'https://x', token: 'u' });
  });

  it('parses each command with its options, global options anywhere', () => {
    expect(parse(['--url', 'http://a:1', 'instances', '--all', '-v']).command).toEqual({ name: 'instances', all: true, json: false, verbose: true });
    expect(parse(['watch', '--interval', '0.5']).command).toEqual({ name: 'watch', all: false, verbose: false, intervalS: 0.5 });
    expect(parse(['register', 'http://10.0.0.1:8000', '-m', 'a', '--model', 'b', '--id', 'gpu-1', '--max-inflight', '8', '--weight', '2']).command).toEqual({
      name: 'register',
      url: 'http://10.0.0.1:8000',
      models: ['a', 'b'],
      id: 'gpu-1',
      maxInflight: 8,
      weight: 2,
      probe: true,
    });
    expect(parse(['register', 'http://10.0.0.1:8000', '-m', 'a', '--no-probe']).command).toMatchObject({ name: 'register', probe: false });
    expect(parse(['register', 'http://10.0.0.1:8000', '-m', 'a', '--api-key', 'sk-1']).command).toMatchObject({ apiKey: 'sk-1' });
    expect(parseInvocation(['register', 'http://10.0.0.1:8000', '-m', 'a', '--api-key-env', 'ENGINE_KEY'], { ENGINE_KEY: 'sk-2' }).command).toMatchObject({ apiKey: 'sk-2' });
    expect(() => parseInvocation(['register', 'http://10.0.0.1:8000', '-m', 'a', '--api-key-env', 'NOPE'], {})).toThrow('NOPE is not set');
    expect(parse(['unregister', 'gpu-1']).command).toEqual({ name: 'unregister', id: 'gpu-1' });
    expect(parse(['--help']).command).toEqual({ name: 'help' });
    expect(parse(['register', '--help']).command).toEqual({ name: 'help', topic: 'register' });
    expect(parse(['help', 'watch']).command).toEqual({ name: 'help', topic: 'watch' });
  });

  it('names what is wrong with a bad invocation', () => {
    expect(failure([])).toMatch(/no command/);
    expect(failure(['frobnicate'])).toMatch(/unknown command 'frobnicate'/);
    expect(failure(['status', '--bogus'])).toMatch(/Unknown option '--bogus'/);
    expect(failure(['register', 'http://a:1', '--model', 'm', '--all'])).toMatch(/--all is not an option of 'register'/);
    expect(failure(['register', '--model', 'm'])).toMatch(/needs URL/);
    expect(failure(['register', 'http://a:1'])).toMatch(/at least one --model/);
    expect(failure(['register', 'ftp://a:1', '-m', 'm'])).toMatch(/URL must be an http/);
    expect(failure(['register', 'http://a:1', '-m', 'm', '--max-inflight', '0'])).toMatch(/--max-inflight/);
    expect(failure(['register', 'http://a:1', '-m', 'm', '--weight', 'heavy'])).toMatch(/--weight must be a number/);
    expect(failure(['unregister'])).toMatch(/needs ID/);
    expect(failure(['unregister', 'a', 'b'])).toMatch(/unexpected argument 'b'/);
    expect(failure(['watch', '--interval', '0'])).toMatch(/--interval must be at least/);
    expect(failure(['status'], { CONTROL_PLANE_URL: 'localhost:8081' })).toMatch(/CONTROL_PLANE_URL must be an http/);
  });
});
