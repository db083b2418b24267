import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RegistrationAgent } from './agent';
import { loadSimConfig } from './sim-config';
import { SimServer } from './sim-server';

/** A stand-in control plane that records what the agent sends. */
class ControlPlane {
  readonly calls: string[] = [];
  readonly server = http.createServer((req, res) => {
    req.resume().on('end', () => {
      this.calls.push(`${req.method} ${req.url}`);
      const body = JSON.stringify({ instance_id: 'sim-x', heartbeat_interval_s: 0.05, ttl_s: 1 });
      res.writeHead(this.status, { 'content-type': 'application/json' }).end(body);
    });
  });
  status = 201;

  listen(port = 0): Promise<number> {
    return new Promise((resolve) => this.server.listen(port, '127.0.0.1', () => resolve((this.server.address() as AddressInfo).port)));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const freePort = async () => {
  const cp = new ControlPlane();
  const port = await cp.listen();
  await cp.close();
  return port;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const agentFor = (port: number, extra: Record<string, string>, log: string[]) => {
  const config = loadSimConfig({ CONTROL_PLANE_URL: `http://127.0.0.1:${port}`, INSTANCE_ID: 'sim-x', REGISTER_RETRY_MAX_S: '0.2', ...extra });
  return new RegistrationAgent(config, new SimServer(config), 'http://127.0.0.1:1', (l) => log.push(l));
};

describe('RegistrationAgent', () => {
  it('keeps retrying registration with backoff until a control plane starts, then heartbeats', async () => {
    const port = await freePort();
    const log: string[] = [];
    const agent = agentFor(port, {}, log);
    const started = agent.start();
    await sleep(600);
    expect(log.filter((l) => l.includes('retrying registration')).length).toBeGreaterThanOrEqual(2);
    const cp = new ControlPlane();
    await cp.listen(port);
    await started;
    await sleep(300);
    agent.stop();
    await cp.close();
    expect(cp.calls[0]).toBe('POST /v1/instances');
    expect(cp.calls.filter((c) => c === 'POST /v1/instances/sim-x/heartbeat').length).toBeGreaterThanOrEqual(2);
  });

  it('with SIM_HEARTBEAT=false registers and never heartbeats', async () => {
    const cp = new ControlPlane();
    const port = await cp.listen();
    const agent = agentFor(port, { SIM_HEARTBEAT: 'false' }, []);
    await agent.start();
    await sleep(300);
    agent.stop();
    await cp.close();
    expect(cp.calls).toEqual(['POST /v1/instances']);
  });

  it('stops retrying on a refusal that waiting cannot fix, with the reason', async () => {
    const cp = new ControlPlane();
    cp.status = 401;
    const port = await cp.listen();
    await expect(agentFor(port, {}, []).start()).rejects.toThrow(/registration failed: 401/);
    await cp.close();
  });

  it('rejects a SIM_HEARTBEAT that is not a boolean, naming the variable', () => {
    expect(() => loadSimConfig({ SIM_HEARTBEAT: 'maybe' })).toThrow(/SIM_HEARTBEAT: must be true or false/);
  });
});
