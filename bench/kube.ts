// Kubernetes benchmark (make bench-kube): the operator against a real API server with the CRDs of
// crds/ installed (E2E_KUBECONFIG, else KUBECONFIG). Figures on stdout, progress on stderr; every
// figure comes with a ratio to a baseline measured in the same run. Not a test: nothing fails.
//
// 1. Propagation. Namespace bench-kube-prop holds 100 Rules, a Connector and a Bundle; two operators
//    run in this process (startOperator, namespaced, Lease in that namespace): the leader, which
//    builds and then writes status, and a follower, which serves a revision only once the leader's
//    Bundle status records it (what half the OPAs of the 2-replica Deployment see). Each of 100
//    sequential changes edits one Rule's condition or actions (so the bundle bytes change) with
//    GET + replace, while a long poll (`Prefer: wait=30`, If-None-Match: the served ETag) is held
//    on each operator: it returns the moment the new bundle is served, which is what an OPA sees.
//    Propagation = long poll answered - replace returned. Baselines, same changes: the replace's own
//    round trip, and a plain client-node watch on the Rules seeing the new resourceVersion (timed
//    from the replace being issued, as is the propagation it is compared with). Two series:
//    "spaced" waits until both operators are idle (status written, its watch echo handled) before
//    each change; "back-to-back" makes the next change as soon as both answered, so it meets the
//    previous change's status writes.
// 2. Startup and memory. 100 namespaces bench-kube-000..099 with 100 Rules each (conditions as in
//    bench/generate.ts, each with its own constant), a Connector and a Bundle: 10,200 objects,
//    created 50 at a time (timed). Then `node src/cli.ts serve` runs as a child process with
//    --namespaces naming exactly those 100 (never cluster-wide: other namespaces belong to other
//    people's tests), Lease in bench-kube-ops: spawn to /readyz 200, spawn to all 100 bundles in
//    /metrics (acl_bundle_revision), CPU time to ready, RSS (/proc VmRSS) at ready and after 10 s
//    idle (once acl_queue_depth is 0), and per object: (figure with the objects - figure empty) /
//    objects. Started twice: first (every status, token Secret and Event still to write) and again
//    (statuses current). Baseline: the same command with --namespaces bench-kube-empty.
//    BENCH_BASELINE, BENCH_ONLY, BENCH_PREFIX and BENCH_NODE_FLAGS: see their constants below.
//
// The bench-kube-* namespaces are deleted at the end unless BENCH_KEEP=1 (a later run reuses kept
// ones, so its first start is then not a first start: the status writes column says so).
// BENCH_QUICK=1: 10 namespaces and 20 changes, a smoke check whose figures are not for quoting.
// BENCH_CPU_PROF=<dir>: the 10,000-rule starts run with --cpu-prof and their top functions print.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiextensionsV1Api, VersionApi, Watch } from '@kubernetes/client-node';
import { statusOf } from '../src/kube/client.ts';
import { baselineTree } from './baseline-tree.ts';
import { CONDITIONS } from './generate.ts';
import { summariseProfile, type Profile } from './http/cpuprofile.ts';
import { processCpuUs } from './http/procfs.ts';
import {
  CREATE_CONCURRENCY,
  createAll as createAllWith,
  dropNamespaces as dropAll,
  ensureNamespace as ensureWith,
  pool,
  RULES_PER_NS,
  tenantObjects,
  type BenchObject,
} from './kube/objects.ts';
import { fmt, machine, table } from './http/report.ts';

const KUBECONFIG = process.env['E2E_KUBECONFIG'] || process.env['KUBECONFIG'] || '';
if (!KUBECONFIG) {
  process.stderr.write(
    'bench/kube.ts needs a cluster with the CRDs of crds/ installed: set E2E_KUBECONFIG or KUBECONFIG (e.g. local-kube: KUBECONFIG=/tmp/local-kube/kubeconfig)\n',
  );
  process.exit(2);
}
// The e2e helpers read E2E_KUBECONFIG when they load.
process.env['E2E_KUBECONFIG'] = KUBECONFIG;
const { adminClients, GROUP, loadConfig, readToken, ROOT, startE2EOperator, VERSION, waitFor } = await import('../test/support/kube.ts');

const QUICK = process.env['BENCH_QUICK'] === '1';
const KEEP = process.env['BENCH_KEEP'] === '1';
const PROFILE_DIR = process.env['BENCH_CPU_PROF'] || undefined;
const CHANGES = QUICK ? 20 : 100;
const NAMESPACES = QUICK ? 10 : 100;
const IDLE_S = 10;
// Another prefix lets two people share one API server without touching each other's namespaces.
const PREFIX = process.env['BENCH_PREFIX'] || 'bench-kube';
// BENCH_ONLY=startup skips the propagation series (the startup and memory table alone, about 2 minutes).
const ONLY_STARTUP = process.env['BENCH_ONLY'] === 'startup';
// BENCH_BASELINE=<checkout>: the second start also runs that tree's src/cli.ts (e.g. a `git worktree`
// of the commit before a change), on the same objects, right after this tree's: a before/after in one run.
const BASELINE_TREE = baselineTree();
// BENCH_NODE_FLAGS: node flags for the operator's process (e.g. the Deployment's NODE_OPTIONS).
const NODE_FLAGS = (process.env['BENCH_NODE_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
const PROP_NS = `${PREFIX}-prop`;
const OPS_NS = `${PREFIX}-ops`;
const EMPTY_NS = `${PREFIX}-empty`;
const TENANTS = Array.from({ length: NAMESPACES }, (_, i) => `${PREFIX}-${String(i).padStart(3, '0')}`);

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const ms = (n: number): string => `${fmt(n, n < 10 ? 1 : 0)} ms`;
const s = (msN: number): string => `${fmt(msN / 1000, 1)} s`;
const mb = (bytes: number): string => `${fmt(bytes / 2 ** 20)} MB`;
const kb = (bytes: number): string => `${fmt(bytes / 1024, 1)} KB`;
const x = (n: number): string => `${fmt(n, n < 10 ? 1 : 0)}x`;
/** Nearest rank. */
const pct = (xs: readonly number[], q: number): number => {
  const v = [...xs].sort((a, b) => a - b);
  return v[Math.max(0, Math.ceil(q * v.length) - 1)] as number;
};

function unusable(err: unknown): never {
  progress(`bench/kube.ts: the cluster of ${KUBECONFIG} is not usable: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
}
const { kc, core, custom } = (() => {
  try {
    return { kc: loadConfig(KUBECONFIG), ...adminClients() };
  } catch (err) {
    unusable(err);
  }
})();
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(130));

const ensureNamespace = (name: string): Promise<void> => ensureWith(core, name);
const createAll = (objects: readonly BenchObject[], label: string): Promise<number> => createAllWith(custom, objects, label);
const dropNamespaces = (names: readonly string[]): Promise<void> => dropAll(core, names);

// --- 1. propagation ------------------------------------------------------------------------------

interface Change {
  readonly writeMs: number;
  readonly watchMs: number;
  readonly leaderMs: number;
  readonly followerMs: number;
}

async function propagation(): Promise<{ spaced: Change[]; backToBack: Change[]; conflicts: number }> {
  progress(`propagation: namespace ${PROP_NS}, ${RULES_PER_NS} rules, a leader and a follower in this process`);
  await ensureNamespace(PROP_NS);
  await createAll(tenantObjects(PROP_NS, 1), 'objects');
  const stateDir = mkdtempSync(join(tmpdir(), 'acl-bench-kube-'));
  const leader = await startE2EOperator({ namespace: PROP_NS, identity: 'bench-leader', stateDir: join(stateDir, 'leader') });
  await waitFor('the leader', () => leader.elector.isLeader());
  const follower = await startE2EOperator({ namespace: PROP_NS, identity: 'bench-follower', stateDir: join(stateDir, 'follower') });
  const ops = [leader, follower];
  const token = await waitFor('the connector token', () => readToken(PROP_NS, 'opa'));
  const url = (op: typeof leader): string => `${op.apiUrl}/${PROP_NS}/connectors/policyagent/opa/bundles/all`;
  const etags = await Promise.all(
    ops.map((op) =>
      waitFor('a served bundle', async () => {
        const res = await fetch(url(op), { headers: { authorization: `Bearer ${token}` } });
        await res.arrayBuffer();
        return res.status === 200 ? (res.headers.get('etag') ?? undefined) : undefined;
      }),
    ),
  );
  await waitFor('both operators serving the same revision', async () => {
    const res = await fetch(url(follower), { headers: { authorization: `Bearer ${token}`, 'if-none-match': etags[0] as string } });
    await res.arrayBuffer();
    if (res.status === 304) etags[1] = etags[0] as string;
    return res.status === 304;
  });

  // The plain watch: when each resourceVersion of a Rule reached a client-node watch.
  const seen = new Map<string, number>();
  const watch = await new Watch(kc).watch(
    `/apis/${GROUP}/${VERSION}/namespaces/${PROP_NS}/rules`,
    {},
    (_phase, obj: { metadata?: { resourceVersion?: string } }) => {
      const rv = obj.metadata?.resourceVersion;
      if (rv && !seen.has(rv)) seen.set(rv, performance.now());
    },
    () => undefined,
  );

  let conflicts = 0;
  let n = 0;
  /** One change of rule n % 100: a new condition constant, or new actions, every time. */
  async function change(): Promise<{ t0: number; t1: number; rv: string }> {
    const i = n++;
    const name = `rule-${String(i % RULES_PER_NS).padStart(3, '0')}`;
    for (;;) {
      const current = (await custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: PROP_NS,
        plural: 'rules',
        name,
      })) as { spec: Record<string, unknown> };
      const spec =
        i % 2 === 0
          ? { ...current.spec, condition: `${CONDITIONS[i % CONDITIONS.length]} && principal.id != "change-${i}"` }
          : { ...current.spec, actions: [`action-${i % 20}`, `changed-${i}`] };
      const t0 = performance.now();
      try {
        const res = (await custom.replaceNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: PROP_NS,
          plural: 'rules',
          name,
          body: { ...current, spec },
        })) as { metadata: { resourceVersion: string } };
        return { t0, t1: performance.now(), rv: res.metadata.resourceVersion };
      } catch (err) {
        if (statusOf(err) !== 409) throw err;
        conflicts++; // the operator wrote this Rule's status meanwhile
      }
    }
  }

  /** A held long poll on each operator; resolves with when each answered with a new ETag. */
  async function holdPolls(): Promise<Promise<number>[]> {
    const answers = ops.map(async (op, k) => {
      const res = await fetch(url(op), {
        headers: { authorization: `Bearer ${token}`, 'if-none-match': etags[k] as string, prefer: 'wait=30' },
      });
      const at = performance.now();
      await res.arrayBuffer();
      const etag = res.headers.get('etag');
      if (res.status !== 200 || !etag || etag === etags[k])
        throw new Error(`operator ${k}: ${res.status} with ETag ${etag} (had ${etags[k]})`);
      etags[k] = etag;
      return at;
    });
    for (const a of answers) a.catch(() => undefined);
    await waitFor(
      'both long polls held',
      async () => (await Promise.all(ops.map(async (op) => (await op.metrics.longPolls.get()).values[0]?.value ?? 0))).every((v) => v >= 1),
      5000,
    );
    return answers;
  }

  async function series(label: string, spaced: boolean): Promise<Change[]> {
    const out: Change[] = [];
    for (let k = -5; k < CHANGES; k++) {
      // 5 unmeasured changes first
      if (spaced) {
        await sleep(100);
        await Promise.all(ops.map((op) => op.controller.idle()));
      }
      const polls = await holdPolls();
      const { t0, t1, rv } = await change();
      const [tl, tf] = (await Promise.all(polls)) as [number, number];
      const tw = await waitFor('the watch event', () => seen.get(rv), 10_000);
      if (k >= 0) out.push({ writeMs: t1 - t0, watchMs: tw - t0, leaderMs: tl - t1, followerMs: tf - t1 });
      if (k >= 0 && (k + 1) % 20 === 0) progress(`  ${label}: ${k + 1}/${CHANGES}`);
    }
    return out;
  }

  try {
    const spaced = await series('spaced', true);
    const backToBack = await series('back-to-back', false);
    return { spaced, backToBack, conflicts };
  } finally {
    watch.abort();
    await follower.stop();
    await leader.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

// --- 2. startup and memory -----------------------------------------------------------------------

interface Start {
  readonly readyMs: number;
  readonly bundlesMs: number | undefined;
  readonly cpuMs: number;
  readonly rssReady: number;
  readonly rssIdle: number;
  readonly heapIdle: number;
  readonly statusWrites: number;
  readonly stopMs: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const vmRss = (pid: number): number => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
const metric = (text: string, name: string): number =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);

/** Spawns `serve` on `namespaces`, measures it up to IDLE_S after ready, stops it (SIGTERM). */
async function startup(label: string, namespaces: readonly string[], bundles: number, profile: boolean, root = ROOT): Promise<Start> {
  const port = await freePort();
  const stateDir = mkdtempSync(join(tmpdir(), 'acl-bench-kube-'));
  const profDir = PROFILE_DIR && profile ? join(PROFILE_DIR, label.replace(/\W+/g, '-')) : undefined;
  if (profDir) mkdirSync(profDir, { recursive: true });
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [
      ...NODE_FLAGS,
      ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
      join(root, 'src', 'cli.ts'),
      'serve',
      '--kubeconfig',
      KUBECONFIG,
      '--insecure-http',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      `127.0.0.1:${port}`,
      '--console-listen',
      '127.0.0.1:0',
      '--operator-namespace',
      OPS_NS,
      '--identity',
      'bench',
      '--namespaces',
      namespaces.join(','),
      '--state-dir',
      stateDir,
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.add(child);
  let output = '';
  const keep = (d: Buffer): void => {
    output = (output + d.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) =>
    child.on('exit', () => {
      children.delete(child);
      resolve();
    }),
  );
  const pid = child.pid as number;
  const ops = `http://127.0.0.1:${port}`;
  const get = async (path: string): Promise<{ status: number; text: string } | undefined> => {
    try {
      const res = await fetch(`${ops}${path}`);
      return { status: res.status, text: await res.text() };
    } catch {
      return undefined;
    }
  };
  /** SIGTERM, then SIGKILL after 60 s; how long the process took to exit. */
  const stop = async (): Promise<number> => {
    const t1 = performance.now();
    child.kill('SIGTERM');
    const killer = setTimeout(() => {
      progress(`  ${label}: still running 60 s after SIGTERM: SIGKILL`);
      child.kill('SIGKILL');
    }, 60_000);
    await exited;
    clearTimeout(killer);
    rmSync(stateDir, { recursive: true, force: true });
    progress(`  ${label}: exited ${s(performance.now() - t1)} after SIGTERM`);
    return performance.now() - t1;
  };
  try {
    let readyMs: number | undefined;
    let bundlesMs: number | undefined = bundles === 0 ? undefined : NaN;
    let cpuMs = 0;
    let rssReady = 0;
    let lastBundles = -1;
    for (let tick = 0; readyMs === undefined || Number.isNaN(bundlesMs); tick++) {
      if (child.exitCode !== null) throw new Error(`${label}: the operator exited (${child.exitCode}):\n${output}`);
      if (performance.now() - t0 > 15 * 60_000) throw new Error(`${label}: not ready after 15 minutes:\n${output}`);
      if (readyMs === undefined && (await get('/readyz'))?.status === 200) {
        readyMs = performance.now() - t0;
        cpuMs = (await processCpuUs(pid)) / 1000;
        rssReady = vmRss(pid);
        progress(`  ${label}: ready after ${s(readyMs)}`);
      }
      if (Number.isNaN(bundlesMs) && tick % 4 === 0) {
        const count = [...((await get('/metrics'))?.text ?? '').matchAll(/^acl_bundle_revision\{/gm)].length;
        if (count >= bundles) {
          bundlesMs = performance.now() - t0;
          progress(`  ${label}: ${bundles} bundles served after ${s(bundlesMs)}`);
        } else if (count !== lastBundles && tick % 40 === 20) {
          lastBundles = count;
          progress(`  ${label}: ${count}/${bundles} bundles after ${s(performance.now() - t0)}`);
        }
      }
      await sleep(50);
    }
    // Idle means the queue is empty: on a loaded machine a start's status writes and their echoes
    // can outlast the ready point by minutes, and memory measured then is not memory at rest.
    const q0 = performance.now();
    while (metric((await get('/metrics'))?.text ?? '', 'acl_queue_depth') > 0 && performance.now() - q0 < 10 * 60_000) await sleep(500);
    if (performance.now() - q0 > 1000) progress(`  ${label}: queue empty ${s(performance.now() - q0)} after bundles`);
    progress(`  ${label}: idle for ${IDLE_S} s`);
    await sleep(IDLE_S * 1000);
    const rssIdle = vmRss(pid);
    const metrics = (await get('/metrics'))?.text ?? '';
    progress(
      `  ${label}: RSS ${mb(rssIdle)}, V8 heap ${mb(metric(metrics, 'acl_nodejs_heap_size_total_bytes'))} (used ${mb(metric(metrics, 'acl_nodejs_heap_size_used_bytes'))}), external ${mb(metric(metrics, 'acl_nodejs_external_memory_bytes'))}; queue ${metric(metrics, 'acl_queue_depth')}, reconciles ${fmt(metric(metrics, 'acl_reconcile_total'))}, lists ${fmt(metric(metrics, 'acl_watch_lists_total'))}, watch restarts ${fmt(metric(metrics, 'acl_watch_restarts_total'))}`,
    );
    const heapIdle = metric(metrics, 'acl_nodejs_heap_size_used_bytes');
    const statusWrites = metric(metrics, 'acl_status_writes_total');
    return { readyMs, bundlesMs, cpuMs, rssReady, rssIdle, heapIdle, statusWrites, stopMs: await stop() };
  } catch (err) {
    await stop();
    throw err;
  }
}

function profileSummary(label: string): string[] {
  if (!PROFILE_DIR) return [];
  const dir = join(PROFILE_DIR, label.replace(/\W+/g, '-'));
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  return file
    ? [
        `CPU profile of "${label}" (${join(dir, file)}):`,
        ...summariseProfile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile, 15).map((l) => `  ${l}`),
      ]
    : [];
}

/** The propagation series and its table. */
async function reportPropagation(): Promise<void> {
  const prop = await propagation();
  console.log('');
  console.log(
    `Propagation: Rule replace accepted -> new bundle ETag on a held long poll, ${CHANGES} sequential changes, ${RULES_PER_NS} rules in the tenant`,
  );
  const row = (
    what: string,
    xs: readonly number[],
    fromIssue: readonly number[] | undefined,
    write: readonly number[],
    watch: readonly number[],
  ): string[] => [
    what,
    ms(pct(xs, 0.5)),
    ms(pct(xs, 0.9)),
    ms(pct(xs, 0.99)),
    ms(Math.max(...xs)),
    fromIssue ? x(pct(xs, 0.5) / pct(write, 0.5)) : '',
    fromIssue ? x(pct(fromIssue, 0.5) / pct(watch, 0.5)) : '',
  ];
  const rows: string[][] = [];
  for (const [name, cs] of [
    ['spaced', prop.spaced],
    ['back-to-back', prop.backToBack],
  ] as const) {
    const write = cs.map((c) => c.writeMs);
    const watch = cs.map((c) => c.watchMs);
    rows.push(row(`${name}: API server replace round trip (baseline)`, write, undefined, write, watch));
    rows.push(row(`${name}: plain watch sees it, from the replace issued (baseline)`, watch, undefined, write, watch));
    rows.push(
      row(
        `${name}: leader serves it`,
        cs.map((c) => c.leaderMs),
        cs.map((c) => c.leaderMs + c.writeMs),
        write,
        watch,
      ),
    );
    rows.push(
      row(
        `${name}: follower serves it`,
        cs.map((c) => c.followerMs),
        cs.map((c) => c.followerMs + c.writeMs),
        write,
        watch,
      ),
    );
  }
  for (const l of table(['', 'p50', 'p90', 'p99', 'max', 'p50 / replace', 'p50 / watch'], rows)) console.log(`  ${l}`);
  console.log(
    `  target: leader p50 < 200 ms (spaced ${ms(
      pct(
        prop.spaced.map((c) => c.leaderMs),
        0.5,
      ),
    )}); 409 conflicts retried: ${prop.conflicts}`,
  );
  console.log('  (p50 / watch compares times from the replace being issued, p50 / replace times from its return)');
}

// --- run -----------------------------------------------------------------------------------------

const server = kc.getCurrentCluster()?.server ?? '?';
const version = await kc.makeApiClient(VersionApi).getCode().catch(unusable);
const crds = await kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition().catch(unusable);
const missing = ['rules', 'connectors', 'bundles']
  .map((p) => `${p}.${GROUP}`)
  .filter((n) => !crds.items.some((c) => c.metadata?.name === n));
if (missing.length > 0) unusable(`${server} lacks the CRDs ${missing.join(', ')}: install them with kubectl apply -f crds/`);

console.log(
  `acl-operator Kubernetes benchmark, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check, not figures to quote)' : ''}`,
);
console.log(`machine: ${machine()}`);
console.log(`API server: ${server}, Kubernetes ${version.gitVersion}`);
const allNamespaces = [PROP_NS, OPS_NS, EMPTY_NS, ...TENANTS];
// An earlier run's namespaces still being deleted would load the API server during this one.
const terminating = async (): Promise<number> =>
  (await core.listNamespace({ labelSelector: 'acl-operator-bench=true' })).items.filter((n) => n.status?.phase === 'Terminating').length;
if ((await terminating()) > 0) {
  const w0 = performance.now();
  progress(`waiting for ${await terminating()} namespaces of an earlier run to be deleted`);
  await waitFor('the namespaces of an earlier run to be deleted', async () => (await terminating()) === 0, 15 * 60_000);
  progress(`  they were gone after ${s(performance.now() - w0)}`);
}
try {
  if (!ONLY_STARTUP) await reportPropagation();

  progress(`startup: creating ${NAMESPACES} namespaces with ${RULES_PER_NS} rules, a connector and a bundle each`);
  const objects = TENANTS.flatMap((ns, i) => tenantObjects(ns, 1000 + i));
  const c0 = performance.now();
  await pool([OPS_NS, EMPTY_NS, ...TENANTS], 10, async (ns) => {
    await ensureNamespace(ns);
  });
  const created = await createAll(objects, 'objects');
  const createMs = performance.now() - c0;

  const N = fmt(NAMESPACES * RULES_PER_NS);
  const base = await startup('baseline (1 empty namespace)', [EMPTY_NS], 0, false);
  const first = await startup(`${N} rules, first start`, TENANTS, NAMESPACES, true);
  const again = await startup(`${N} rules, second start`, TENANTS, NAMESPACES, true);
  // The other tree right after, on the same objects (statuses current, as for the second start).
  const before = BASELINE_TREE
    ? {
        base: await startup('BENCH_BASELINE tree, 1 empty namespace', [EMPTY_NS], 0, false, BASELINE_TREE),
        again: await startup(`BENCH_BASELINE tree, ${N} rules, second start`, TENANTS, NAMESPACES, false, BASELINE_TREE),
      }
    : undefined;

  console.log('');
  console.log(
    `Startup and memory: ${fmt(NAMESPACES)} namespaces x (${RULES_PER_NS} rules, 1 connector, 1 bundle), --namespaces naming them, a child process${NODE_FLAGS.length > 0 ? ` (node ${NODE_FLAGS.join(' ')})` : ''}`,
  );
  console.log(
    `  objects: ${fmt(created)} created in ${s(createMs)} with ${NAMESPACES + 2} namespaces (${fmt(created / (createMs / 1000))} objects/s, ${CREATE_CONCURRENCY} in flight)${created < objects.length ? `; ${fmt(objects.length - created)} existed already (BENCH_KEEP)` : ''}`,
  );
  const held = objects.length;
  // Per object: (figure with the objects - the same tree's figure empty) / objects held.
  const perObject = (r: Start, empty: Start): string =>
    r === empty ? '' : `${kb((r.rssIdle - empty.rssIdle) / held)} / ${kb((r.heapIdle - empty.heapIdle) / held)}`;
  const startRow = (what: string, r: Start, empty: Start): string[] => [
    what,
    s(r.readyMs),
    r.bundlesMs === undefined ? '-' : s(r.bundlesMs),
    s(r.cpuMs),
    mb(r.rssReady),
    mb(r.rssIdle),
    mb(r.heapIdle),
    perObject(r, empty),
    fmt(r.statusWrites),
    s(r.stopMs),
    r === empty ? '' : `${x(r.readyMs / empty.readyMs)} / ${x(r.rssIdle / empty.rssIdle)}`,
  ];
  const startTable = table(
    [
      '',
      'to /readyz',
      'to all bundles',
      'CPU to ready',
      'RSS ready',
      `RSS +${IDLE_S} s`,
      'heap used',
      `per object (RSS / heap), ${fmt(held)} objects`,
      'status writes',
      'SIGTERM to exit',
      'x baseline (ready / RSS)',
    ],
    [
      startRow('baseline: 1 empty namespace', base, base),
      startRow(`${N} rules, first start`, first, base),
      startRow(`${N} rules, second start`, again, base),
      ...(before
        ? [
            startRow('BENCH_BASELINE tree: 1 empty namespace', before.base, before.base),
            startRow(`BENCH_BASELINE tree: ${N} rules, second start`, before.again, before.base),
          ]
        : []),
    ],
  );
  for (const l of startTable) console.log(`  ${l}`);
  if (before) {
    console.log(
      `  this tree / BENCH_BASELINE (${BASELINE_TREE}): empty RSS ${x(base.rssIdle / before.base.rssIdle)}, second start RSS ${x(again.rssIdle / before.again.rssIdle)}, heap ${x(again.heapIdle / before.again.heapIdle)}, RSS per object ${x((again.rssIdle - base.rssIdle) / (before.again.rssIdle - before.base.rssIdle))}, ready ${x(again.readyMs / before.again.readyMs)}`,
    );
  }
  for (const l of [...profileSummary(`${N} rules, first start`), ...profileSummary(`${N} rules, second start`)]) console.log(l);
} finally {
  if (KEEP) progress(`BENCH_KEEP=1: kept namespaces ${PROP_NS}, ${OPS_NS}, ${EMPTY_NS}, ${PREFIX}-000..`);
  else {
    progress(`deleting the ${PREFIX}-* namespaces`);
    await dropNamespaces(allNamespaces);
  }
}
