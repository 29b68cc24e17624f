// The cluster benchmark's decisions part: bench/cluster/client.ts in a pod, POST /authorization at
// saturation through the Service, against the same client and the same build (dist/) run outside the
// cluster on this machine (standalone, the same rule and key, the Deployment's heap flag), with 2
// replicas and scaled to 1, rounds interleaved with the outside runs.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { selfSignedCertificate } from '../../src/tls/index.ts';
import {
  kubectl,
  kubectlJson,
  OPERATOR_NS,
  operatorPodCount as podCount,
  readyOperators,
  ROOT,
  waitFor,
} from '../../test/cluster/support.ts';
import { scriptPod, TENANT } from '../../test/cluster/workload.ts';
import { fmt, table } from '../http/report.ts';
import { median } from '../http/rounds.ts';

export interface Options {
  readonly apiKey: string;
  readonly seconds: number;
  readonly rounds: number;
  readonly log: (line: string) => void;
}

/** What bench/cluster/client.ts printed. */
interface Load {
  answered: number;
  failed: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
}

export interface DecisionRow {
  readonly variant: string;
  readonly loads: Load[];
  readonly baselines: Load[];
}

async function inCluster(o: Options, round: string): Promise<Load> {
  const name = `acl-bench-${round}`;
  const pod = scriptPod({
    name,
    script: 'client.ts',
    configMap: 'acl-bench',
    once: true,
    env: [
      { name: 'ACL_URL', value: 'https://acl-operator.acl-system.svc:8443' },
      { name: 'API_KEY', value: o.apiKey },
      { name: 'SECONDS', value: String(o.seconds) },
    ],
  });
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify(pod) });
  await waitFor(
    `${name} done`,
    async () => {
      const p = await kubectlJson<{ status: { phase?: string } }>(['-n', TENANT, 'get', 'pod', name]);
      if (p.status.phase === 'Failed') throw new Error(`${name} failed: ${await kubectl(['-n', TENANT, 'logs', name])}`);
      return p.status.phase === 'Succeeded';
    },
    (o.seconds + 120) * 1000,
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
async function startOutside(o: Options): Promise<{ url: string; ca: string; stop(): void }> {
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
        stringData: { token: o.apiKey },
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
      'off',
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
async function outside(o: Options, target: { url: string; ca: string }): Promise<Load> {
  const out = await new Promise<string>((resolve, reject) => {
    const c = spawn(process.execPath, [join(ROOT, 'bench', 'cluster', 'client.ts')], {
      env: { ...process.env, ACL_URL: target.url, API_KEY: o.apiKey, SECONDS: String(o.seconds), NODE_EXTRA_CA_CERTS: target.ca },
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

/** Both variants, each against the outside baseline; the Deployment is back at 2 replicas afterwards. */
export async function measureDecisions(o: Options): Promise<DecisionRow[]> {
  const decisionRows: { variant: string; loads: Load[]; baselines: Load[] }[] = [];
  const target = await startOutside(o);
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
    for (let r = 0; r < o.rounds; r++) {
      const first = r % 2 === 0;
      if (first) row.baselines.push(await outside(o, target));
      row.loads.push(await inCluster(o, `${replicas}-${r}`));
      if (!first) row.baselines.push(await outside(o, target));
      o.log(
        `  ${row.variant}, round ${r + 1}/${o.rounds}: ${fmt(row.loads.at(-1)?.rps ?? 0)} req/s against ${fmt(row.baselines.at(-1)?.rps ?? 0)} outside`,
      );
    }
    decisionRows.push(row);
  }
  target.stop();
  await kubectl(['-n', OPERATOR_NS, 'scale', 'deploy/acl-operator', '--replicas=2']);
  await waitFor('2 Ready replicas', async () => (await podCount()) === 2 && (await readyOperators()).length === 2, 300_000);
  return decisionRows;
}

/** The table of the decisions part. */
export function decisionReport(o: Options, decisionRows: readonly DecisionRow[]): string[] {
  const out: string[] = [];
  out.push(
    `Decisions at saturation (16 connections, ${o.seconds} s windows, ${o.rounds} rounds, medians; outside: the same build and client on this machine, in the same run)`,
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
    out.push(`  ${line}`);
  return out;
}
