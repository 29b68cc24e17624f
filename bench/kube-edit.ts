// One edited Rule among 10,000 on the Kubernetes leader, with no load (node bench/kube-edit.ts
// [checkout ...]; E2E_KUBECONFIG or KUBECONFIG): namespace <BENCH_PREFIX>-steady holds 10,000 Rules
// (bench/http/tenant.ts), a Connector and a Bundle. For each checkout given (default: this one), in
// turn on the same objects, `src/cli.ts serve` starts with --cpu-prof, and EDITS (default 20) spaced
// edits each GET + replace one Rule while a long poll (If-None-Match, Prefer: wait=30) is held:
// replace returned → long poll answered, the process's CPU per edit, reconciles and status writes
// per edit, and the CPU profile of the edits' window only. Spaced: the queue is empty (status written,
// its echo handled) before the next edit. The namespaces are deleted unless BENCH_KEEP=1.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { statusOf } from '../src/kube/index.ts';
import { summariseProfile, type Profile } from './http/cpuprofile.ts';
import { processCpuUs } from './http/procfs.ts';
import { tenantRules } from './http/tenant.ts';

const KUBECONFIG = process.env['E2E_KUBECONFIG'] || process.env['KUBECONFIG'] || '';
if (!KUBECONFIG) {
  process.stderr.write('bench/kube-edit.ts needs a cluster with the CRDs of crds/ installed: set E2E_KUBECONFIG or KUBECONFIG\n');
  process.exit(2);
}
process.env['E2E_KUBECONFIG'] = KUBECONFIG;
const { adminClients, GROUP, readToken, ROOT, VERSION, waitFor } = await import('../test/support/kube.ts');
const { core, custom } = adminClients();
const PREFIX = process.env['BENCH_PREFIX'] || 'bench-kube-edit';
const NS = `${PREFIX}-steady`;
const OPS = `${PREFIX}-edit-ops`;
const EDITS = Number(process.env['EDITS'] ?? 20);
const trees = process.argv.length > 2 ? process.argv.slice(2) : [ROOT];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const rules = tenantRules(10_000);
const ruleSpec = (i: number, edit = 0): Record<string, unknown> => {
  const r = rules[i] as (typeof rules)[number];
  return {
    state: 'Enforced',
    subjectType: r.subjectType,
    actions: [...r.actions],
    resourceType: r.resourceType,
    condition: edit > 0 ? `${r.condition} && principal.id != "edit-${edit}"` : r.condition,
  };
};
const object = (kind: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind,
  metadata: { name, namespace: NS },
  spec,
});
const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
const metric = (text: string, name: string): number =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);

/** The profile's samples between two CLOCK_MONOTONIC times in µs (V8's profile clock and hrtime share it). */
function window(whole: Profile & { startTime: number }, from: number, to: number): Profile {
  let ts = whole.startTime;
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  whole.samples.forEach((sample, i) => {
    ts += whole.timeDeltas[i] as number;
    if (ts >= from && ts <= to) {
      samples.push(sample);
      timeDeltas.push(whole.timeDeltas[i] as number);
    }
  });
  return { nodes: whole.nodes, samples, timeDeltas };
}

for (const name of [NS, OPS])
  await core.createNamespace({ body: { metadata: { name, labels: { 'acl-operator-bench': 'true' } } } }).catch((err: unknown) => {
    if (statusOf(err) !== 409) throw err;
  });
const items = [
  { plural: 'connectors', body: object('Connector', 'opa', {}) },
  { plural: 'bundles', body: object('Bundle', 'all', { connector: 'opa' }) },
  ...rules.map((r, i) => ({ plural: 'rules', body: object('Rule', r.name, ruleSpec(i)) })),
];
let next = 0;
await Promise.all(
  Array.from({ length: 50 }, async () => {
    while (next < items.length) {
      const { plural, body } = items[next++] as (typeof items)[number];
      await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural, body }).catch((err: unknown) => {
        if (statusOf(err) !== 409) throw err;
      });
    }
  }),
);
progress(`${NS}: 10,000 rules, a connector and a bundle`);
const run = Date.now() % 1_000_000;
const children = new Set<ReturnType<typeof spawn>>();
let editNo = 0;
try {
  for (const tree of trees) {
    const [port, ops] = [await freePort(), await freePort()];
    const state = mkdtempSync(join(tmpdir(), 'acl-bench-kube-edit-'));
    const prof = mkdtempSync(join(tmpdir(), 'acl-bench-kube-edit-prof-'));
    mkdirSync(prof, { recursive: true });
    const child = spawn(
      process.execPath,
      [
        '--cpu-prof',
        `--cpu-prof-dir=${prof}`,
        join(tree, 'src', 'cli.ts'),
        'serve',
        '--kubeconfig',
        KUBECONFIG,
        '--insecure-http',
        '--listen',
        `127.0.0.1:${port}`,
        '--ops-listen',
        `127.0.0.1:${ops}`,
        '--console-listen',
        '127.0.0.1:0',
        '--operator-namespace',
        OPS,
        '--identity',
        `bench-kube-edit-${process.pid}-${trees.indexOf(tree)}`,
        '--namespaces',
        NS,
        '--state-dir',
        state,
        '--log-level',
        'error',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    children.add(child);
    child.once('exit', () => children.delete(child));
    const exited = new Promise((r) => child.once('exit', r));
    const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${ops}/metrics`)).text();
    const ready = async (): Promise<boolean> => (await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => undefined))?.status === 200;
    await waitFor('the operator to be ready', ready, 900_000);
    const idle = (): Promise<true> =>
      waitFor('the queue to be empty', async () => metric(await metrics(), 'acl_queue_depth') === 0 || undefined, 900_000);
    // The leader, not a follower waiting for a Lease an earlier run left (it serves only what a leader recorded).
    await waitFor('the operator to lead', async () => metric(await metrics(), 'acl_leader') === 1 || undefined, 120_000);
    await idle();
    const token = await waitFor('the connector token', () => readToken(NS, 'opa'), 60_000);
    const url = `http://127.0.0.1:${port}/${NS}/connectors/policyagent/opa/bundles/all`;
    // Served once this replica leads (or the leader recorded the revision it built).
    let etag = await waitFor(
      'the bundle to be served',
      async () => {
        const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        await res.arrayBuffer();
        return res.status === 200 ? (res.headers.get('etag') ?? undefined) : undefined;
      },
      120_000,
    );
    const times: number[] = [];
    const m0 = await metrics();
    const cpu0 = await processCpuUs(child.pid as number);
    const from = Number(process.hrtime.bigint() / 1000n);
    for (let n = 0; n < EDITS; n++) {
      const i = (++editNo * 37) % rules.length;
      const poll = fetch(url, { headers: { authorization: `Bearer ${token}`, 'if-none-match': etag, prefer: 'wait=30' } });
      await sleep(20);
      const name = (rules[i] as (typeof rules)[number]).name;
      const current = (await custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: NS,
        plural: 'rules',
        name,
      })) as Record<string, unknown>;
      const body = { ...current, spec: ruleSpec(i, run * 1000 + editNo) };
      await custom.replaceNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: 'rules', name, body });
      const t0 = performance.now();
      const res = await poll;
      times.push(performance.now() - t0);
      if (res.status !== 200) throw new Error(`the long poll answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
      etag = res.headers.get('etag') ?? '';
      await sleep(300);
      await idle();
    }
    const cpuMs = ((await processCpuUs(child.pid as number)) - cpu0) / 1000;
    const to = Number(process.hrtime.bigint() / 1000n);
    const m1 = await metrics();
    const perEdit = (name: string): string => ((metric(m1, name) - metric(m0, name)) / EDITS).toFixed(2);
    child.kill('SIGTERM');
    await exited;
    rmSync(state, { recursive: true, force: true });
    const sorted = [...times].sort((a, b) => a - b);
    const q = (p: number): string => (sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] as number).toFixed(0);
    console.log(
      `${tree}: ${EDITS} spaced edits, replace returned -> long poll answered: p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${q(1)} ms; ` +
        `CPU per edit (whole process, status writes and lint included) ${(cpuMs / EDITS).toFixed(0)} ms; per edit: reconciles ${perEdit('acl_reconcile_total')}, status writes ${perEdit('acl_status_writes_total')}`,
    );
    const file = readdirSync(prof).find((f) => f.endsWith('.cpuprofile'));
    if (file) {
      const whole = JSON.parse(readFileSync(join(prof, file), 'utf8')) as Profile & { startTime: number };
      for (const l of summariseProfile(window(whole, from, to), 15)) console.log(`  ${l}`);
    }
    rmSync(prof, { recursive: true, force: true });
  }
} finally {
  // An operator left by a failed run would hold the Lease for the next one.
  for (const child of children) child.kill('SIGKILL');
  if (process.env['BENCH_KEEP'] !== '1') for (const name of [NS, OPS]) await core.deleteNamespace({ name }).catch(() => undefined);
}
