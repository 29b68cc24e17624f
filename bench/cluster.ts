// Cluster benchmark (make bench-cluster, not part of make bench): acl-operator in real pods, on a
// cluster whose node runs them (CLUSTER_KUBECONFIG; make cluster-up), installed as the cluster tier
// installs it. Three measurements, each against a baseline of the same run:
//   1. decisions through the Service: bench/cluster/client.ts in a pod, POST /authorization at
//      saturation, against the same client and the same build (dist/) run outside the cluster on this
//      machine (standalone, the same rule and key, the Deployment's heap flag); with 2 replicas and
//      scaled to 1, rounds interleaved with the outside runs;
//   2. the failover gap: the leader pod deleted while the tier's application decides and polls; the
//      time the Lease had no holder (from the release the old leader writes to the new acquireTime,
//      both server-side) and the failed requests (0 is the bar);
//   3. memory per object in the pod: cgroup usage and RSS of both replicas at 0, 2,550, 5,100 and
//      10,200 objects (tenants of 100 Rules, a Connector and a Bundle), and then on, 5,100 objects at
//      a time, until a replica passes 80 % of the 512Mi limit, restarts, or 30,600 objects; a replica
//      restarted with everything present, its peak (memory.max_usage_in_bytes) and time to Ready.
//   BENCH_ROUNDS=3 (decision rounds per variant), BENCH_SECONDS=10, BENCH_MAX_TENANTS=300.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { selfSignedCertificate } from '../src/tls/index.ts';
import { adaptForServer, cleanSlate, prepareInstallFolder } from '../test/cluster/setup.ts';
import {
  CLUSTER_KUBECONFIG,
  IMAGE,
  kubectl,
  kubectlJson,
  leaseHolder,
  OPERATOR_NS,
  readyOperators,
  ROOT,
  run,
  say,
  waitFor,
} from '../test/cluster/support.ts';
import { CONCURRENCY, loadCounts, loadManifest, mb, objectsOf, podMemory, restartsAndKills, TENANT } from '../test/cluster/workload.ts';
import { fmt, machine, table } from './http/report.ts';
import { median } from './http/rounds.ts';

if (!CLUSTER_KUBECONFIG) {
  process.stderr.write('bench-cluster needs CLUSTER_KUBECONFIG: a cluster whose node runs pods, the image loaded (make cluster-up)\n');
  process.exit(2);
}
const ROUNDS = Number(process.env['BENCH_ROUNDS']) || 3;
const SECONDS = Number(process.env['BENCH_SECONDS']) || 10;
const MAX_TENANTS = Number(process.env['BENCH_MAX_TENANTS']) || 300;
const LIMIT = 512 * 1024 * 1024;
const kc = new KubeConfig();
kc.loadFromFile(CLUSTER_KUBECONFIG);
const log = (line: string) => process.stdout.write(`${line}\n`);

interface Load {
  answered: number;
  failed: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
}

// ---- setup: the operator installed, the tenant shop with its rule, an API key ----------------------
const dir = prepareInstallFolder();
await adaptForServer(dir);
await cleanSlate(dir);
await kubectl(['apply', '-f', 'crds/', '-f', 'deploy/'], { cwd: dir });
await kubectl(['-n', OPERATOR_NS, 'rollout', 'status', 'deploy/acl-operator', '--timeout=300s']);
await kubectl(['apply', '-f', 'deploy/examples/opa-sidecar.yaml'], { cwd: dir });
await kubectl(['-n', TENANT, 'wait', '--for=condition=RolledOut', 'bundle/storefront-policies', '--timeout=300s']);
// The tier's application (decides 50/s, polls 5/s, counts failures) and its API key Secret acl-load.
await kubectl(['apply', '-f', '-'], { input: loadManifest() });
const apiKey = Buffer.from(
  (await kubectlJson<{ data: { token: string } }>(['-n', TENANT, 'get', 'secret', 'acl-load'])).data.token,
  'base64',
).toString();
const clientSource = readFileSync(join(ROOT, 'bench', 'cluster', 'client.ts'), 'utf8');
await kubectl(['apply', '-f', '-'], {
  input: JSON.stringify({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'acl-bench', namespace: TENANT },
    data: { 'client.ts': clientSource },
  }),
});
log(`acl-operator cluster benchmark, ${new Date().toISOString()}`);
log(`machine: ${machine()}`);
log(
  `cluster: ${(JSON.parse(await kubectl(['version', '-o', 'json'])) as { serverVersion?: { gitVersion?: string } }).serverVersion?.gitVersion}, image ${IMAGE}`,
);

// ---- 1. decisions through the Service against the same build outside the cluster -----------------
async function inCluster(round: string): Promise<Load> {
  const name = `acl-bench-${round}`;
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: TENANT },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'client',
          image: IMAGE,
          imagePullPolicy: 'IfNotPresent',
          command: ['node', '/bench/client.ts'],
          env: [
            { name: 'ACL_URL', value: 'https://acl-operator.acl-system.svc:8443' },
            { name: 'API_KEY', value: apiKey },
            { name: 'SECONDS', value: String(SECONDS) },
            { name: 'NODE_EXTRA_CA_CERTS', value: '/var/run/acl-operator/ca.crt' },
          ],
          securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          volumeMounts: [
            { name: 'bench', mountPath: '/bench', readOnly: true },
            { name: 'token', mountPath: '/var/run/acl-operator', readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'bench', configMap: { name: 'acl-bench' } },
        { name: 'token', secret: { secretName: 'storefront-token' } },
      ],
    },
  };
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify(pod) });
  await waitFor(
    `${name} done`,
    async () => {
      const p = await kubectlJson<{ status: { phase?: string } }>(['-n', TENANT, 'get', 'pod', name]);
      if (p.status.phase === 'Failed') throw new Error(`${name} failed: ${await kubectl(['-n', TENANT, 'logs', name])}`);
      return p.status.phase === 'Succeeded';
    },
    (SECONDS + 120) * 1000,
  );
  const out = await kubectl(['-n', TENANT, 'logs', name]);
  await kubectl(['-n', TENANT, 'delete', 'pod', name, '--wait=false']);
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Load;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** The same build, standalone on this machine: the tenant's rule and the same key, the pod's heap flag. */
async function startOutside(): Promise<{ url: string; ca: string; stop(): void }> {
  const work = mkdtempSync(join(tmpdir(), 'acl-bench-outside-'));
  const manifests = join(work, 'manifests');
  mkdirSync(manifests);
  const rule = (await kubectlJson<{ spec: unknown }>(['-n', TENANT, 'get', 'rule', 'team-documents'])).spec;
  writeFileSync(
    join(manifests, 'shop.yaml'),
    [
      JSON.stringify({
        apiVersion: 'acl.policyagent.dev/v1alpha1',
        kind: 'Rule',
        metadata: { name: 'team-documents', namespace: TENANT },
        spec: rule,
      }),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'key', namespace: TENANT, labels: { 'acl.policyagent.dev/api-key': 'true' } },
        stringData: { token: apiKey },
      }),
    ].join('\n---\n'),
  );
  const pair = await selfSignedCertificate({
    commonName: 'localhost',
    organization: 'bench',
    dnsNames: ['localhost'],
    ips: ['127.0.0.1'],
    now: new Date(),
  });
  writeFileSync(join(work, 'tls.crt'), pair.cert);
  writeFileSync(join(work, 'tls.key'), pair.private);
  const [port, ops] = [await freePort(), await freePort()];
  const args = [
    'serve',
    '--manifests',
    manifests,
    '--state-dir',
    join(work, 'state'),
    '--listen',
    `127.0.0.1:${port}`,
    '--ops-listen',
    `127.0.0.1:${ops}`,
  ];
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'dist', 'cli.js'),
      ...args,
      '--console-listen',
      '',
      '--tls-cert',
      join(work, 'tls.crt'),
      '--tls-key',
      join(work, 'tls.key'),
      '--log-level',
      'warn',
    ],
    {
      env: { ...process.env, NODE_OPTIONS: '--max-old-space-size=384' },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  await waitFor('the outside service ready', async () => (await fetch(`http://127.0.0.1:${ops}/readyz`)).ok, 60_000, 200);
  return { url: `https://127.0.0.1:${port}`, ca: join(work, 'tls.crt'), stop: () => child.kill('SIGTERM') };
}

/** The same client on this machine, against the outside service. */
async function outside(target: { url: string; ca: string }): Promise<Load> {
  const out = await new Promise<string>((resolve, reject) => {
    const c = spawn(process.execPath, [join(ROOT, 'bench', 'cluster', 'client.ts')], {
      env: { ...process.env, ACL_URL: target.url, API_KEY: apiKey, SECONDS: String(SECONDS), NODE_EXTRA_CA_CERTS: target.ca },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let text = '';
    c.stdout.setEncoding('utf8').on('data', (d: string) => {
      text += d;
    });
    c.once('error', reject);
    c.once('close', () => resolve(text));
  });
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Load;
}

const podCount = async () => (await kubectl(['-n', OPERATOR_NS, 'get', 'pods', '-o', 'name'])).trim().split('\n').filter(Boolean).length;
const decisionRows: { variant: string; loads: Load[]; baselines: Load[] }[] = [];
const target = await startOutside();
for (const replicas of [2, 1]) {
  await kubectl(['-n', OPERATOR_NS, 'scale', 'deploy/acl-operator', `--replicas=${replicas}`]);
  await waitFor(
    `${replicas} Ready replica(s)`,
    async () => (await podCount()) === replicas && (await readyOperators()).length === replicas,
    300_000,
  );
  const row = {
    variant: `through the Service, ${replicas} replica${replicas > 1 ? 's' : ''}`,
    loads: [] as Load[],
    baselines: [] as Load[],
  };
  for (let r = 0; r < ROUNDS; r++) {
    const first = r % 2 === 0;
    if (first) row.baselines.push(await outside(target));
    row.loads.push(await inCluster(`${replicas}-${r}`));
    if (!first) row.baselines.push(await outside(target));
    log(
      `  ${row.variant}, round ${r + 1}/${ROUNDS}: ${fmt(row.loads.at(-1)?.rps ?? 0)} req/s against ${fmt(row.baselines.at(-1)?.rps ?? 0)} outside`,
    );
  }
  decisionRows.push(row);
}
target.stop();
await kubectl(['-n', OPERATOR_NS, 'scale', 'deploy/acl-operator', '--replicas=2']);
await waitFor('2 Ready replicas', async () => (await podCount()) === 2 && (await readyOperators()).length === 2, 300_000);

// ---- 2. the failover gap ---------------------------------------------------------------------------
const leases = kc.makeApiClient(CoordinationV1Api);
const gaps: { gapMs: number; failed: number; answered: number }[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const before = await loadCounts();
  const leader = await leaseHolder();
  await kubectl(['-n', OPERATOR_NS, 'delete', 'pod', leader, '--wait=false']);
  let released: number | undefined;
  let acquired: number | undefined;
  await waitFor(
    'a new Lease holder',
    async () => {
      const l = await leases.readNamespacedLease({ name: 'acl-operator', namespace: OPERATOR_NS });
      const holder = l.spec?.holderIdentity ?? '';
      if (holder === '' && l.spec?.renewTime) released = new Date(l.spec.renewTime as unknown as string).getTime();
      if (holder !== '' && holder !== leader && l.spec?.acquireTime) acquired = new Date(l.spec.acquireTime as unknown as string).getTime();
      return acquired !== undefined;
    },
    120_000,
    50,
  );
  await waitFor('2 Ready replicas', async () => (await podCount()) === 2 && (await readyOperators()).length === 2, 300_000);
  const after = await waitFor(
    'decisions after the failover',
    async () => {
      const c = await loadCounts();
      return c.decisions.ok > before.decisions.ok + 100 && c;
    },
    60_000,
  );
  const gapMs = released !== undefined && acquired !== undefined ? acquired - released : Number.NaN;
  gaps.push({
    gapMs,
    failed: after.decisions.failed - before.decisions.failed + after.polls.failed - before.polls.failed,
    answered: after.decisions.ok - before.decisions.ok,
  });
  log(
    `  failover ${r + 1}/${ROUNDS}: no leader for ${fmt(gapMs)} ms; ${gaps.at(-1)?.failed} failed of ${gaps.at(-1)?.answered} decisions answered`,
  );
}

// ---- 3. memory per object in the pod ---------------------------------------------------------------
const api = KubernetesObjectApi.makeApiClient(kc);
let tenants = 0;
async function grow(to: number): Promise<number> {
  const queue = Array.from({ length: to - tenants }, (_, i) => objectsOf(tenants + i));
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) for (const o of next) await api.create(o);
    }),
  );
  tenants = to;
  await waitFor(
    `${to} sizing Bundles built`,
    async () => {
      const { items } = await kubectlJson<{ items: { metadata: { namespace: string }; status?: { revision?: number } }[] }>([
        'get',
        'bundles',
        '-A',
      ]);
      return items.filter((b) => b.metadata.namespace.startsWith('acl-size-') && (b.status?.revision ?? 0) > 0).length === to;
    },
    1_800_000,
    3_000,
  );
  return (Date.now() - t0) / 1000;
}
async function memory(): Promise<{ cgroup: number; rss: number }> {
  await new Promise((r) => setTimeout(r, 15_000)); // let the last reconciles' garbage go
  const m = await Promise.all((await readyOperators()).map((p) => podMemory(p.metadata.name)));
  return { cgroup: Math.max(...m.map((x) => x.cgroupBytes)), rss: Math.max(...m.map((x) => x.rssBytes)) };
}
const steps: { tenants: number; objects: number; seconds: number; cgroup: number; rss: number; restarts: number }[] = [];
const base = await memory();
steps.push({ tenants: 0, objects: 0, seconds: 0, ...base, restarts: 0 });
log(`  memory with the example tenant only: cgroup ${mb(base.cgroup)}, RSS ${mb(base.rss)}`);
for (const to of [25, 50, 100, 150, 200, 250, 300].filter((t) => t <= MAX_TENANTS)) {
  const seconds = await grow(to);
  const m = await memory();
  const { restarts, oomKilled } = await restartsAndKills();
  steps.push({ tenants: to, objects: to * 102, seconds, ...m, restarts: restarts + oomKilled });
  log(
    `  ${fmt(to * 102)} objects (created and built in ${fmt(seconds)} s): cgroup ${mb(m.cgroup)}, RSS ${mb(m.rss)}, restarts ${restarts}, OOMKilled ${oomKilled}`,
  );
  if (restarts + oomKilled > 0 || m.cgroup > 0.8 * LIMIT) break;
}
// A replica restarted with everything present: how long to Ready, and its peak while it listed and built.
const running = (await readyOperators()).map((p) => p.metadata.name);
const victim = running[1] ?? '';
const tRestart = Date.now();
await kubectl(['-n', OPERATOR_NS, 'delete', 'pod', victim, '--wait=false']);
const fresh = await waitFor(
  'the replacement Ready',
  async () => (await readyOperators()).find((p) => !running.includes(p.metadata.name)),
  900_000,
  1_000,
);
const readyS = (Date.now() - tRestart) / 1000;
const peakCmd = 'cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.peak';
const peak = Number((await run('kubectl', ['-n', OPERATOR_NS, 'exec', fresh.metadata.name, '--', 'sh', '-c', peakCmd])).stdout.trim());

// ---- report ------------------------------------------------------------------------------------------
log('');
log(
  `Decisions at saturation (16 connections, ${SECONDS} s windows, ${ROUNDS} rounds, medians; outside: the same build and client on this machine, in the same run)`,
);
for (const line of table(
  ['variant', 'req/s', 'p50', 'p99', 'failed', 'outside req/s', 'outside p99', '× outside'],
  decisionRows.map((row) => {
    const rps = median(row.loads.map((l) => l.rps));
    const out = median(row.baselines.map((l) => l.rps));
    return [
      row.variant,
      fmt(rps),
      `${fmt(median(row.loads.map((l) => l.p50)), 2)} ms`,
      `${fmt(median(row.loads.map((l) => l.p99)), 2)} ms`,
      fmt(row.loads.reduce((n, l) => n + l.failed, 0)),
      fmt(out),
      `${fmt(median(row.baselines.map((l) => l.p99)), 2)} ms`,
      fmt(rps / out, 2),
    ];
  }),
))
  log(`  ${line}`);
log('');
log(`Failover (the leader pod deleted, ${ROUNDS} times, the application deciding 50/s and polling 5/s through the Service)`);
log(
  `  no leader for ${gaps.map((g) => `${fmt(g.gapMs)} ms`).join(', ')} (median ${fmt(median(gaps.map((g) => g.gapMs)))} ms); failed requests: ${gaps.reduce((n, g) => n + g.failed, 0)} of ${gaps.reduce((n, g) => n + g.answered, 0)} decisions answered meanwhile`,
);
log('');
log('Memory in the pod (the larger of the two replicas, 15 s after the last Bundle was built)');
for (const line of table(
  ['objects', 'created and built', 'cgroup', 'RSS', 'per object (RSS, from 0)', 'restarts'],
  steps.map((s) => [
    fmt(s.objects),
    s.objects ? `${fmt(s.seconds)} s` : '',
    mb(s.cgroup),
    mb(s.rss),
    s.objects ? `${fmt((s.rss - base.rss) / s.objects / 1024, 1)} KiB` : '',
    fmt(s.restarts),
  ]),
))
  log(`  ${line}`);
const last = steps.at(-1) ?? steps[0];
if (last && last.objects > 0) {
  const perObject = (last.rss - base.rss) / last.objects;
  log(
    `  slope: ${fmt(perObject / 1024, 1)} KiB of RSS per object; 512 MiB RSS at about ${fmt((LIMIT - base.rss) / perObject)} objects by that slope`,
  );
}
log(
  `  a replica restarted with ${fmt(tenants * 102)} objects present: Ready in ${fmt(readyS)} s, peak ${mb(peak)} (memory.max_usage_in_bytes, start-up included)`,
);
await run('kubectl', ['delete', 'namespace', '-l', 'acl-cluster-tier=true', '--wait=false']);
say('the sizing namespaces are being deleted; the operator stays installed (make test-cluster starts from a clean slate)');
