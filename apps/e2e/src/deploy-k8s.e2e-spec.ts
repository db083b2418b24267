import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments, parse } from 'yaml';
import { helpVariables, ROOT } from './image';

jest.setTimeout(60_000);

type Obj = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec: any };

const DIR = path.join(ROOT, 'deploy/k8s');
const kustomization = parse(readFileSync(path.join(DIR, 'kustomization.yaml'), 'utf8')) as { resources: string[]; images: { name: string; newTag: string }[] };
const objects: Obj[] = kustomization.resources.flatMap((file) => parseAllDocuments(readFileSync(path.join(DIR, file), 'utf8')).map((d) => d.toJSON() as Obj));
const of = (kind: string) => objects.filter((o) => o.kind === kind);
const workloads = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
const byName = (kind: string, name: string) => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  return o;
};
const selects = (selector: Record<string, string>, labels: Record<string, string> = {}) => Object.entries(selector).every(([k, v]) => labels[k] === v);
const containers = (w: Obj): any[] => w.spec.template.spec.containers;
const env = (c: any): Record<string, string> => Object.fromEntries((c.env ?? []).map((e: any) => [e.name, e.value]));
/** A probe or Service port: a number, or the name of one of the container's ports. */
const portNumber = (c: any, port: number | string) => (typeof port === 'number' ? port : c.ports.find((p: any) => p.name === port)?.containerPort);
const switchyard = (c: any) => String(c.image).startsWith('switchyard:');

it('kustomization.yaml lists every manifest in deploy/k8s, and the image tag is the package version', () => {
  const yamls = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
  expect([...kustomization.resources].sort()).toEqual(yamls.sort());
  const version = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;
  expect(kustomization.images).toEqual([{ name: 'switchyard', newTag: version }]);
  for (const w of workloads) for (const c of containers(w).filter(switchyard)) expect(c.image).toBe(`switchyard:${version}`);
});

it('every object is valid against the Kubernetes schemas (kubernetes-models)', () => {
  const r = spawnSync(process.execPath, [path.join(__dirname, 'k8s-validate.mjs')], { cwd: ROOT, input: JSON.stringify(objects), encoding: 'utf8' });
  expect(r.stderr).toBe('');
  const results = JSON.parse(r.stdout) as (string | null)[];
  expect(objects.map((o, i) => [o.kind, o.metadata.name, results[i]])).toEqual(objects.map((o) => [o.kind, o.metadata.name, null]));
});

describe('every container', () => {
  const all = workloads.flatMap((w) => containers(w).map((c) => [`${w.metadata.name}/${c.name}`, w, c] as const));

  it.each(all)('%s: resources, a locked-down securityContext, a versioned image pulled IfNotPresent', (_name, w, c) => {
    expect(c.resources.requests).toEqual(expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }));
    expect(c.resources.limits.memory).toEqual(expect.any(String));
    expect(w.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    expect(c.securityContext).toEqual(expect.objectContaining({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } }));
    expect(c.imagePullPolicy).toBe('IfNotPresent');
    expect(c.image).toMatch(/:[0-9][\w.-]*$/);
  });

  it.each(all)('%s: startup, readiness (failureThreshold >= 3) and liveness probes on its own ports', (_name, _w, c) => {
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      expect([probe, c[probe]]).toEqual([probe, expect.any(Object)]);
      if (c[probe].httpGet) expect(c.ports.map((p: any) => p.containerPort)).toContain(portNumber(c, c[probe].httpGet.port));
    }
    expect(c.readinessProbe.failureThreshold).toBeGreaterThanOrEqual(3);
  });
});

it('selectors match their pod templates, Services reach a container port, PDBs and the HPA name real workloads', () => {
  for (const w of workloads) {
    const labels = w.spec.template.metadata.labels;
    expect([w.metadata.name, selects(w.spec.selector.matchLabels, labels)]).toEqual([w.metadata.name, true]);
    for (const t of w.spec.template.spec.topologySpreadConstraints ?? []) expect(selects(t.labelSelector.matchLabels, labels)).toBe(true);
  }
  for (const s of of('Service')) {
    const targets = workloads.filter((w) => selects(s.spec.selector, w.spec.template.metadata.labels));
    expect([s.metadata.name, targets.length]).toEqual([s.metadata.name, 1]);
    const c = containers(targets[0])[0];
    for (const p of s.spec.ports) expect(c.ports.map((x: any) => x.containerPort)).toContain(portNumber(c, p.targetPort));
  }
  for (const pdb of of('PodDisruptionBudget')) {
    expect(workloads.filter((w) => selects(pdb.spec.selector.matchLabels, w.spec.template.metadata.labels))).toHaveLength(1);
  }
  const [hpa] = of('HorizontalPodAutoscaler');
  const target = byName(hpa.spec.scaleTargetRef.kind, hpa.spec.scaleTargetRef.name);
  // The HPA owns the proxies' count: a fixed replicas field would reset it on every apply.
  expect(target.spec.replicas).toBeUndefined();
  expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
  expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
});

it('each server gets only variables it reads, Redis at the Redis Service, the admin token from a Secret', () => {
  const redisSvc = byName('Service', 'switchyard-redis');
  for (const w of workloads) {
    for (const c of containers(w).filter(switchyard)) {
      const known = helpVariables(c.args[0]);
      const names = c.env.map((e: any) => e.name);
      expect([w.metadata.name, names.filter((n: string) => !known.includes(n))]).toEqual([w.metadata.name, []]);
      expect(env(c).REDIS_URL).toBe(`redis://${redisSvc.metadata.name}:${redisSvc.spec.ports[0].port}`);
      expect(Number(env(c).PORT)).toBe(c.ports[0].containerPort);
      expect(env(c).HOST).toBe('0.0.0.0');
    }
  }
  const cp = containers(byName('Deployment', 'switchyard-control-plane'))[0];
  expect(cp.env.find((e: any) => e.name === 'ADMIN_TOKEN')).toEqual({ name: 'ADMIN_TOKEN', valueFrom: { secretKeyRef: { name: 'switchyard-admin', key: 'token' } } });
  // Closed by default: the Secret is the operator's (none shipped with a known token), not optional, and nothing opens the API again.
  expect(of('Secret')).toEqual([]);
  for (const w of workloads) for (const c of containers(w)) expect([w.metadata.name, c.env?.some((e: any) => e.name === 'ALLOW_OPEN_ADMIN') ?? false]).toEqual([w.metadata.name, false]);
});

it('two control-plane replicas; Redis a StatefulSet with AOF on its claim; prometheus annotations on the scraped port', () => {
  expect(byName('Deployment', 'switchyard-control-plane').spec.replicas).toBe(2);
  const redis = byName('StatefulSet', 'switchyard-redis');
  const rc = containers(redis)[0];
  expect(rc.args.join(' ')).toContain('--appendonly yes');
  const claim = redis.spec.volumeClaimTemplates[0].metadata.name;
  expect(rc.volumeMounts).toContainEqual({ name: claim, mountPath: '/data' });
  expect(redis.spec.serviceName).toBe(byName('Service', 'switchyard-redis').metadata.name);
  for (const name of ['switchyard-proxy', 'switchyard-control-plane']) {
    const d = byName('Deployment', name);
    const a = d.spec.template.metadata.annotations;
    expect([a['prometheus.io/scrape'], a['prometheus.io/path'], Number(a['prometheus.io/port'])]).toEqual(['true', '/metrics', containers(d)[0].ports[0].containerPort]);
  }
});

it("the proxy's grace period exceeds settle + drain, and the settle window outlasts readiness failing", () => {
  const d = byName('Deployment', 'switchyard-proxy');
  const c = containers(d)[0];
  const e = env(c);
  const grace = d.spec.template.spec.terminationGracePeriodSeconds;
  expect(grace).toBeGreaterThan(Number(e.DRAIN_SETTLE_S) + Number(e.DRAIN_TIMEOUT_S));
  expect(Number(e.TERMINATION_GRACE_S)).toBe(grace);
  expect(Number(e.DRAIN_SETTLE_S)).toBeGreaterThanOrEqual(c.readinessProbe.periodSeconds * c.readinessProbe.failureThreshold);
  expect(d.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
});
