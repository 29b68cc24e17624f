// Start to ready in Kubernetes mode, this tree against another checkout in the same run (issue 26):
//   E2E_KUBECONFIG=<kubeconfig> BENCH_BASELINE=<checkout> node bench/kube-start.ts
// The tenants of bench/kube.ts's startup part (100 namespaces x 100 Rules with a constant each, a
// Connector and a Bundle: 10,200 objects) in namespaces of their own, bench-start-*, so a
// bench/kube.ts run on the same API server is left alone. Each round starts `node src/cli.ts serve`
// of both trees in turn (the order alternating), twice each: a first start (every status and token
// Secret removed before it) and a second right after it (statuses as the first start left them: it is
// stopped at ready and writes the rest while it stops, killed after 60 s). Figures: spawn to /readyz 200,
// the process's CPU time then (/proc, less noisy than wall time on a shared machine), RSS and the
// reconciles counted by then; ratios are this tree's medians over the baseline's. An empty namespace
// starts first, per tree, as the floor. BENCH_ROUNDS (default 3); BENCH_KEEP=1 keeps the namespaces;
// BENCH_CPU_PROF=<dir>: this tree's starts of the last round run with --cpu-prof into <dir>/<kind>
// (read them with bench/http/cpuprofile.ts's summary: bench/profile-summary.ts).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { statusOf } from '../src/kube/client.ts';
import { baselineTree } from './baseline-tree.ts';
import { CONDITIONS, rng } from './generate.ts';
import { processCpuUs } from './http/procfs.ts';
import { fmt, machine, table } from './http/report.ts';

const KUBECONFIG = process.env['E2E_KUBECONFIG'] || process.env['KUBECONFIG'] || '';
const BASELINE = baselineTree();
if (!KUBECONFIG || !BASELINE) {
  process.stderr.write('usage: E2E_KUBECONFIG=<kubeconfig> BENCH_BASELINE=<checkout to compare with> node bench/kube-start.ts\n');
  process.exit(2);
}
process.env['E2E_KUBECONFIG'] = KUBECONFIG;
const { adminClients, GROUP, ROOT, VERSION } = await import('../test/support/kube.ts');
const { core, custom } = adminClients();

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const KEEP = process.env['BENCH_KEEP'] === '1';
const PROFILE_DIR = process.env['BENCH_CPU_PROF'] || undefined;
const NAMESPACES = 100;
const RULES_PER_NS = 100;
const PREFIX = 'bench-start';
const OPS_NS = `${PREFIX}-ops`;
const EMPTY_NS = `${PREFIX}-empty`;
const TENANTS = Array.from({ length: NAMESPACES }, (_, i) => `${PREFIX}-${String(i).padStart(3, '0')}`);
const PLURALS = ['rules', 'connectors', 'bundles'] as const;
const TOKEN_LABEL = 'acl.policyagent.dev/connector';

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const s = (ms: number): string => `${fmt(ms / 1000, 2)} s`;
const mb = (bytes: number): string => `${fmt(bytes / 2 ** 20)} MB`;
const median = (xs: readonly number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  const m = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? (v[m] as number) : ((v[m - 1] as number) + (v[m] as number)) / 2;
};

async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

/** A tenant as bench/kube.ts makes it: 100 Rules with their own constant, Connector `opa`, Bundle `all`. */
function tenantObjects(ns: string, seed: number): { plural: (typeof PLURALS)[number]; body: Record<string, unknown> }[] {
  const r = rng(seed);
  const object = (kind: string, name: string, spec: Record<string, unknown>) => ({
    apiVersion: `${GROUP}/${VERSION}`,
    kind,
    metadata: { name, namespace: ns },
    spec,
  });
  return [
    ...Array.from({ length: RULES_PER_NS }, (_, i) => {
      const actions = [...new Set([`action-${Math.floor(r() * 20)}`, `action-${Math.floor(r() * 20)}`])];
      return {
        plural: 'rules' as const,
        body: object('Rule', `rule-${String(i).padStart(3, '0')}`, {
          state: 'Enforced',
          description: `Generated rule ${i}`,
          subjectType: `subject-${Math.floor(r() * 50)}`,
          actions,
          resourceType: `resource-${Math.floor(r() * 100)}`,
          condition: `${CONDITIONS[i % CONDITIONS.length]} && principal.id != "nobody-${ns}-${i}"`,
        }),
      };
    }),
    { plural: 'connectors', body: object('Connector', 'opa', {}) },
    { plural: 'bundles', body: object('Bundle', 'all', { connector: 'opa' }) },
  ];
}

async function ensureNamespace(name: string): Promise<void> {
  try {
    await core.createNamespace({ body: { metadata: { name, labels: { 'acl-operator-bench': 'start' } } } });
  } catch (err) {
    if (statusOf(err) !== 409) throw err;
  }
}

/** Back to a first start: every status removed, every token Secret deleted. */
async function clearStatuses(): Promise<void> {
  await pool(TENANTS, 10, async (namespace) => {
    await core.deleteCollectionNamespacedSecret({ namespace, labelSelector: TOKEN_LABEL });
    for (const plural of PLURALS) {
      const list = (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural })) as {
        items: Record<string, unknown>[];
      };
      await pool(
        list.items.filter((o) => o['status'] !== undefined),
        5,
        async (o) => {
          const { status: _status, ...body } = o;
          const name = (o['metadata'] as { name: string }).name;
          await custom.replaceNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace, plural, name, body });
        },
      );
    }
  });
}

function freePort(): Promise<number> {
  return new Promise((done) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => done(port));
    });
  });
}

const vmRss = (pid: number): number => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
const metric = (text: string, name: string, labels = ''): number =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))]
    .filter((m) => (m[1] ?? '').includes(labels))
    .reduce((a, m) => a + Number(m[2]), 0);

interface Start {
  readonly readyMs: number;
  readonly cpuMs: number;
  readonly rss: number;
  readonly reconciles: number;
  readonly ruleReconciles: number;
}

/** Spawns `serve` of `tree` on `namespaces`, waits for /readyz, reads its figures, stops it. */
async function start(tree: string, namespaces: readonly string[], profileDir?: string): Promise<Start> {
  const port = await freePort();
  const stateDir = mkdtempSync(join(tmpdir(), 'acl-bench-start-'));
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [
      ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      join(tree, 'src', 'cli.ts'),
      'serve',
      '--kubeconfig',
      KUBECONFIG,
      '--insecure-http',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      `127.0.0.1:${port}`,
      '--operator-namespace',
      OPS_NS,
      '--identity',
      'bench-start',
      '--namespaces',
      namespaces.join(','),
      '--state-dir',
      stateDir,
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let output = '';
  child.stderr?.on('data', (d: Buffer) => {
    output = (output + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((done) => child.on('exit', () => done()));
  const pid = child.pid as number;
  const get = async (path: string): Promise<{ status: number; text: string } | undefined> => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: res.status, text: await res.text() };
    } catch {
      return undefined;
    }
  };
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the operator exited (${child.exitCode}):\n${output}`);
      if (performance.now() - t0 > 5 * 60_000) throw new Error(`not ready after 5 minutes:\n${output}`);
      if ((await get('/readyz'))?.status === 200) break;
      await sleep(20);
    }
    const readyMs = performance.now() - t0;
    const cpuMs = (await processCpuUs(pid)) / 1000;
    const rss = vmRss(pid);
    const text = (await get('/metrics'))?.text ?? '';
    return {
      readyMs,
      cpuMs,
      rss,
      reconciles: metric(text, 'acl_reconcile_total'),
      ruleReconciles: metric(text, 'acl_reconcile_total', 'kind="Rule"'),
    };
  } finally {
    child.kill('SIGTERM');
    // A first start stopped at ready writes its remaining statuses first; a profile is written only on a clean exit.
    const killer = setTimeout(() => child.kill('SIGKILL'), profileDir ? 600_000 : 60_000);
    await exited;
    clearTimeout(killer);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

const trees = { this: ROOT, baseline: BASELINE } as const;
type Tree = keyof typeof trees;
const kinds = ['empty', 'first', 'second'] as const;
const results = new Map<string, Start[]>();
const record = (tree: Tree, kind: (typeof kinds)[number], r: Start): void => {
  const k = `${tree}/${kind}`;
  results.set(k, [...(results.get(k) ?? []), r]);
  progress(
    `  ${k}: ready ${s(r.readyMs)}, CPU ${s(r.cpuMs)}, RSS ${mb(r.rss)}, reconciles ${fmt(r.reconciles)} (Rules ${fmt(r.ruleReconciles)})`,
  );
};

console.log(`acl-operator start to ready, ${new Date().toISOString()}; this tree ${ROOT}, baseline ${BASELINE}`);
console.log(`machine: ${machine()}`);
progress(`creating ${NAMESPACES} namespaces with ${RULES_PER_NS} rules, a connector and a bundle each`);
await pool([OPS_NS, EMPTY_NS, ...TENANTS], 10, ensureNamespace);
await pool(
  TENANTS.flatMap((ns, i) => tenantObjects(ns, 1000 + i)),
  50,
  async ({ plural, body }) => {
    const namespace = (body['metadata'] as { namespace: string }).namespace;
    await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, body }).catch((err: unknown) => {
      if (statusOf(err) !== 409) throw err;
    });
  },
);
try {
  for (const tree of ['baseline', 'this'] as const) record(tree, 'empty', await start(trees[tree], [EMPTY_NS]));
  for (let round = 0; round < ROUNDS; round++) {
    const order: Tree[] = round % 2 === 0 ? ['baseline', 'this'] : ['this', 'baseline'];
    for (const tree of order) {
      progress(`round ${round + 1}, ${tree}: removing every status and token Secret`);
      await clearStatuses();
      const profile = (kind: string): string | undefined =>
        PROFILE_DIR && tree === 'this' && round === ROUNDS - 1 ? join(PROFILE_DIR, kind) : undefined;
      record(tree, 'first', await start(trees[tree], TENANTS, profile('first')));
      record(tree, 'second', await start(trees[tree], TENANTS, profile('second')));
    }
  }
} finally {
  if (!KEEP) await pool([OPS_NS, EMPTY_NS, ...TENANTS], 10, (name) => core.deleteNamespace({ name }).then(() => undefined));
}

const rows: string[][] = [];
for (const kind of kinds)
  for (const tree of ['baseline', 'this'] as const) {
    const rs = results.get(`${tree}/${kind}`) ?? [];
    const med = (f: (r: Start) => number): number => median(rs.map(f));
    const base = results.get(`baseline/${kind}`) ?? [];
    const ratio = (f: (r: Start) => number): string => (tree === 'this' ? fmt(med(f) / median(base.map(f)), 2) : '');
    rows.push([
      `${kind === 'empty' ? '1 empty namespace' : `10,000 rules, ${kind} start`}: ${tree}`,
      `${s(med((r) => r.readyMs))} (${rs.map((r) => fmt(r.readyMs / 1000, 1)).join(', ')})`,
      `${s(med((r) => r.cpuMs))} (${rs.map((r) => fmt(r.cpuMs / 1000, 1)).join(', ')})`,
      mb(med((r) => r.rss)),
      fmt(med((r) => r.ruleReconciles)),
      ratio((r) => r.readyMs),
      ratio((r) => r.cpuMs),
    ]);
  }
console.log('');
for (const l of table(
  ['', 'to /readyz (median; each)', 'CPU to ready', 'RSS ready', 'Rule reconciles', 'ready / baseline', 'CPU / baseline'],
  rows,
))
  console.log(`  ${l}`);
