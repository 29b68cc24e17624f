// Memory per object (make bench-memory): what each Rule, Kubernetes object and Directory entity costs
// the service at rest. Each figure is a difference against a baseline measured in the same run:
// `node src/cli.ts serve` (a child process, bench/memory/probe.ts loaded: full collections, then
// RSS and heap reported over IPC) loaded and idle, minus the same with nothing loaded, divided by
// the objects added. RSS is read twice: after ordinary full collections (V8's heaps still as large
// as loading made them: what the process holds at rest) and after V8's low-memory collection in
// every thread (what it needs). A heap snapshot of each says where the bytes go: self size by constructor (or
// V8 type), the top 15 kinds by growth, per object.
//   1. standalone: a folder with 10,000 Rules (one file, as bench/http) vs the same with 0;
//   2. Directory entities: 100,000 (20 Directories of 5,000, as bench/steady) vs 0, standalone;
//   3. Kubernetes (E2E_KUBECONFIG or KUBECONFIG; skipped without): 100 namespaces bench-mem-000..099
//      x (100 Rules, a Connector, a Bundle) = 10,200 objects, as bench/kube.ts makes them, vs one
//      empty namespace. Measured on a start with every status already written (a first start that
//      wrote statuses is measured again on a second start). The namespaces are deleted at the end
//      unless BENCH_KEEP=1.
// BENCH_QUICK=1: 500 rules, 5,000 entities, 2 namespaces: a smoke check, not figures to quote.
// BENCH_PARTS=rules,directory,kube (the default: all three) runs only the parts named.
// Not a test: nothing fails. Figures on stdout, progress on stderr.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { clientsFor } from '../src/kube/index.ts';
import { fmt, machine, table } from './http/report.ts';
import { manifestFiles, tenantRules } from './http/tenant.ts';
import { createAll, dropNamespaces, ensureNamespace, pool, RULES_PER_NS, tenantObjects } from './kube/objects.ts';
import { growth } from './memory/heap.ts';
import { measureService, type Run } from './memory/service.ts';
import { DIRECTORY_TENANT, directoryFile, directoryTenant, PER_DIRECTORY } from './steady/tenants.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const KEEP = process.env['BENCH_KEEP'] === '1';
const KUBECONFIG = process.env['E2E_KUBECONFIG'] || process.env['KUBECONFIG'] || '';
const RULES = QUICK ? 500 : 10_000;
const DIRECTORIES = QUICK ? 1 : 20;
const NAMESPACES = QUICK ? 2 : 100;
const TOP = 15;
const PARTS = new Set((process.env['BENCH_PARTS'] || 'rules,directory,kube').split(','));
const OPS_NS = 'bench-mem-ops';
const EMPTY_NS = 'bench-mem-empty';
const LABEL = 'acl-operator-bench-memory';
const TENANTS = Array.from({ length: NAMESPACES }, (_, i) => `bench-mem-${String(i).padStart(3, '0')}`);

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const mb = (bytes: number): string => `${fmt(bytes / 2 ** 20, 1)} MB`;
const per = (bytes: number): string => (Math.abs(bytes) >= 10_240 ? `${fmt(bytes / 1024, 1)} KB` : `${fmt(bytes)} B`);

const root = mkdtempSync(join(tmpdir(), 'acl-bench-memory-'));
process.on('exit', () => rmSync(root, { recursive: true, force: true }));
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(130));

/** A manifests folder of `files`. */
function folder(name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

/** Prints one comparison: the two runs, per object, and the heap by kind per object. */
function report(title: string, unit: string, objects: number, base: Run, loaded: Run): void {
  console.log('');
  console.log(
    `${title}: ${fmt(objects)} ${unit === 'entity' ? 'entities' : `${unit}s`} vs 0 (after full collections; per ${unit} = difference / ${fmt(objects)})`,
  );
  const workers = (r: Run): number => r.workers.reduce((a, w) => a + w.heapUsed, 0);
  const row = (what: string, r: Run): string[] => [
    what,
    mb(r.rss),
    mb(r.heapUsed),
    mb(r.heapTotal),
    mb(workers(r)),
    mb(r.low.rss),
    mb(r.low.heapTotal + r.low.workersTotal),
    `${(r.readyMs / 1000).toFixed(1)} s`,
  ];
  const d = (f: (r: Run) => number): string => per((f(loaded) - f(base)) / objects);
  for (const l of table(
    ['', 'RSS', 'heap used', 'heap total', 'worker heaps used', 'RSS, low-memory GC', 'heaps total, low-memory GC', 'to ready'],
    [
      row(`baseline: ${base.label}`, base),
      row(loaded.label, loaded),
      [
        `per ${unit}`,
        d((r) => r.rss),
        d((r) => r.heapUsed),
        d((r) => r.heapTotal),
        d(workers),
        d((r) => r.low.rss),
        d((r) => r.low.heapTotal + r.low.workersTotal),
        '',
      ],
    ],
  ))
    console.log(`  ${l}`);
  console.log(
    `  RSS ${fmt(loaded.rss / base.rss, 2)}x the baseline (${fmt(loaded.low.rss / base.low.rss, 2)}x after a low-memory GC); heap used ${fmt(loaded.heapUsed / base.heapUsed, 2)}x`,
  );
  const spaces = (r: Run): string =>
    r.spaces
      .filter((sp) => sp.committed >= 2 ** 20)
      .map((sp) => `${sp.name} ${fmt(sp.committed / 2 ** 20)}/${fmt(sp.used / 2 ** 20)}`)
      .join(', ');
  console.log(`  main thread's V8 spaces, MB committed/used: baseline ${spaces(base)}; loaded ${spaces(loaded)}`);
  if (!base.heap || !loaded.heap) return;
  const grown = growth(base.heap.kinds, loaded.heap.kinds);
  const total = grown.reduce((a, g) => a + g.bytes, 0);
  console.log(`  heap snapshots (every thread), self size by kind, growth per ${unit} (total ${per(total / objects)}; top ${TOP}):`);
  for (const l of table(
    ['kind', `bytes per ${unit}`, `count per ${unit}`, 'share'],
    grown.slice(0, TOP).map((g) => [g.kind, per(g.bytes / objects), fmt(g.count / objects, 1), `${fmt((100 * g.bytes) / total)} %`]),
  ))
    console.log(`    ${l}`);
  console.log(`  objects by shape (constructor {properties}), growth per ${unit} (top ${TOP}):`);
  for (const l of table(
    ['shape', `bytes per ${unit}`, `count per ${unit}`],
    growth(base.heap.shapes, loaded.heap.shapes)
      .slice(0, TOP)
      .map((g) => [g.kind.length > 90 ? `${g.kind.slice(0, 87)}...` : g.kind, per(g.bytes / objects), fmt(g.count / objects, 1)]),
  ))
    console.log(`    ${l}`);
}

console.log(
  `acl-operator memory per object, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check, not figures to quote)' : ''}`,
);
console.log(`machine: ${machine()}`);

// 1. Rules, standalone.
if (PARTS.has('rules')) {
  progress(`standalone: ${fmt(RULES)} rules vs 0`);
  const empty = folder('rules-0', manifestFiles(tenantRules(0)));
  const full = folder('rules-n', manifestFiles(tenantRules(RULES)));
  const base = await measureService({ label: 'standalone, 0 rules', args: ['--manifests', empty], bundles: 1, snapshot: true });
  const loaded = await measureService({
    label: `standalone, ${fmt(RULES)} rules`,
    args: ['--manifests', full],
    bundles: 1,
    snapshot: true,
  });
  report('Rules, standalone (tenant bench: an API key, a Connector, a Bundle and the rules)', 'rule', RULES, base, loaded);
}

// 2. Directory entities, standalone.
if (PARTS.has('directory')) {
  const entities = DIRECTORIES * PER_DIRECTORY;
  progress(`directory: ${fmt(entities)} entities vs 0`);
  const files = (n: number): Record<string, string> => ({
    'people.yaml': directoryTenant(),
    ...Object.fromEntries(Array.from({ length: n }, (_, d) => [`dir-${String(d).padStart(3, '0')}.yaml`, directoryFile(d, 0)])),
  });
  const base = await measureService({
    label: 'standalone, 0 entities',
    args: ['--manifests', folder('dir-0', files(0))],
    bundles: 1,
    snapshot: true,
  });
  const loaded = await measureService({
    label: `standalone, ${fmt(entities)} entities`,
    args: ['--manifests', folder('dir-n', files(DIRECTORIES))],
    bundles: 1,
    snapshot: true,
  });
  report(
    `Directory entities, standalone (tenant ${DIRECTORY_TENANT}: one rule reading principal.team, ${DIRECTORIES} Directories of ${fmt(PER_DIRECTORY)})`,
    'entity',
    entities,
    base,
    loaded,
  );
}

// 3. Kubernetes.
if (PARTS.has('kube') && !KUBECONFIG) {
  console.log('');
  console.log('Kubernetes: skipped (set E2E_KUBECONFIG or KUBECONFIG to a cluster with the CRDs of crds/ installed)');
} else if (PARTS.has('kube')) {
  const kc = new KubeConfig();
  kc.loadFromFile(KUBECONFIG);
  const { core, custom } = clientsFor(kc);
  const objects = TENANTS.flatMap((ns, i) => tenantObjects(ns, 1000 + i));
  progress(`kubernetes: ${fmt(objects.length)} objects in ${NAMESPACES} namespaces vs 1 empty namespace`);
  try {
    await pool([OPS_NS, EMPTY_NS, ...TENANTS], 10, (ns) => ensureNamespace(core, ns, LABEL));
    await createAll(custom, objects, 'objects');
    const args = (namespaces: readonly string[]): string[] => [
      '--kubeconfig',
      KUBECONFIG,
      '--operator-namespace',
      OPS_NS,
      '--identity',
      'bench-memory',
      '--namespaces',
      namespaces.join(','),
    ];
    const base = await measureService({ label: 'Kubernetes, 1 empty namespace', args: args([EMPTY_NS]), bundles: 0, snapshot: true });
    const label = `Kubernetes, ${fmt(objects.length)} objects`;
    let loaded = await measureService({ label, args: args(TENANTS), bundles: NAMESPACES, snapshot: true });
    if (loaded.statusWrites > 0) {
      progress(`  that start wrote ${fmt(loaded.statusWrites)} statuses: measuring a second start`);
      loaded = await measureService({ label: `${label}, statuses current`, args: args(TENANTS), bundles: NAMESPACES, snapshot: true });
    }
    report(
      `Kubernetes (${NAMESPACES} namespaces x (${RULES_PER_NS} Rules, a Connector, a Bundle), --namespaces naming them)`,
      'object',
      objects.length,
      base,
      loaded,
    );
  } finally {
    if (KEEP) progress(`BENCH_KEEP=1: kept namespaces ${OPS_NS}, ${EMPTY_NS}, bench-mem-000..`);
    else {
      progress('deleting the bench-mem-* namespaces');
      await dropNamespaces(core, [OPS_NS, EMPTY_NS, ...TENANTS]);
    }
  }
}
