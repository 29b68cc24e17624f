// Steady under change, Kubernetes mode (make bench-steady-kube): the runs of bench/steady.ts with the
// operator (`node src/cli.ts serve`, pinned to core 0) reading a real API server (E2E_KUBECONFIG or
// KUBECONFIG; local-kube works). Namespace bench-steady holds 10,000 Rules, a Connector, a Bundle and
// an API key; with BENCH_DIRECTORY=1, bench-steady-people holds 100 Directories of 5,000 entities.
// Edits are GET + replace of one Rule (one Directory) every second, as kubectl edit would do.
// The namespaces are deleted at the end unless BENCH_KEEP=1 (a later run reuses them).
// Note: the API server and etcd run beside the load generator, so their work during edits is not
// on the operator's core but does compete with the load generator.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { statusOf } from '../../src/kube/index.ts';
import { pinToLoadCore, SERVER_CORE } from '../http/cores.ts';
import { fmt, machine } from '../http/report.ts';
import { API_KEY, decisionBodies, tenantRules } from '../http/tenant.ts';
import { decisionRequest, startLoadgen } from '../http/variants.ts';
import { measureSteady, report } from './measure.ts';
import { DIRECTORIES, PER_DIRECTORY } from './tenants.ts';

const KUBECONFIG = process.env['E2E_KUBECONFIG'] || process.env['KUBECONFIG'] || '';
if (!KUBECONFIG) {
  process.stderr.write('bench/steady/kube.ts needs a cluster with the CRDs of crds/ installed: set E2E_KUBECONFIG or KUBECONFIG\n');
  process.exit(2);
}
process.env['E2E_KUBECONFIG'] = KUBECONFIG;
const { adminClients, ensureCrds, GROUP, readToken, ROOT, VERSION, waitFor } = await import('../../test/support/kube.ts');
const { core, custom } = adminClients();

const QUICK = process.env['BENCH_QUICK'] === '1';
const DIRECTORY = process.env['BENCH_DIRECTORY'] === '1';
const KEEP = process.env['BENCH_KEEP'] === '1';
const RUN_S = QUICK ? 3 : 10;
const NS = 'bench-steady';
const PEOPLE = 'bench-steady-people';
const OPS_NS = 'bench-steady-ops';
const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

console.log(
  `acl-operator steady-under-change benchmark, Kubernetes mode, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check)' : ''}`,
);
console.log(`machine: ${machine()}`);
pinToLoadCore('the operator and the load generator');

async function ensureNamespace(name: string): Promise<void> {
  for (;;) {
    try {
      await core.createNamespace({ body: { metadata: { name } } });
      return;
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
      const existing = await core.readNamespace({ name });
      if (existing.status?.phase !== 'Terminating') return;
      await sleep(1000);
    }
  }
}

async function createAll(
  items: readonly { plural: string; namespace: string; body: Record<string, unknown> }[],
  label: string,
): Promise<void> {
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < items.length) {
        const { plural, namespace, body } = items[next++] as (typeof items)[number];
        try {
          await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, body });
        } catch (err) {
          if (statusOf(err) !== 409) throw err;
        }
        if (++done % 1000 === 0 || done === items.length) progress(`  ${label}: ${fmt(done)}/${fmt(items.length)}`);
      }
    }),
  );
}

const object = (kind: string, namespace: string, name: string, spec: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind,
  metadata: { name, namespace },
  spec,
});
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
const entities = (d: number, edit: number): unknown[] =>
  Array.from({ length: PER_DIRECTORY }, (_, i) => ({
    type: 'user',
    id: `u-${d}-${i}`,
    properties: { team: i === 0 && edit > 0 ? `team-${edit}` : i % 7 === 0 ? 'blue' : 'red', email: `u${i}@example.com` },
  }));

await ensureCrds();
progress('creating the tenants (kept ones are reused)');
await ensureNamespace(NS);
await ensureNamespace(OPS_NS);
await core
  .createNamespacedSecret({
    namespace: NS,
    body: { metadata: { name: 'api-key', labels: { 'acl.policyagent.dev/api-key': 'true' } }, stringData: { token: API_KEY } },
  })
  .catch((err: unknown) => {
    if (statusOf(err) !== 409) throw err;
  });
await createAll(
  [
    { plural: 'connectors', namespace: NS, body: object('Connector', NS, 'opa', {}) },
    { plural: 'bundles', namespace: NS, body: object('Bundle', NS, 'all', { connector: 'opa' }) },
    ...rules.map((r, i) => ({ plural: 'rules', namespace: NS, body: object('Rule', NS, r.name, ruleSpec(i)) })),
  ],
  'rules',
);
if (DIRECTORY) {
  await ensureNamespace(PEOPLE);
  await createAll(
    [
      {
        plural: 'rules',
        namespace: PEOPLE,
        body: object('Rule', PEOPLE, 'same-team', {
          state: 'Enforced',
          subjectType: 'user',
          actions: ['read'],
          resourceType: 'doc',
          condition: 'principal.team == resource.team',
        }),
      },
      { plural: 'connectors', namespace: PEOPLE, body: object('Connector', PEOPLE, 'opa', {}) },
      { plural: 'bundles', namespace: PEOPLE, body: object('Bundle', PEOPLE, 'all', { connector: 'opa' }) },
      ...Array.from({ length: DIRECTORIES }, (_, d) => ({
        plural: 'directories',
        namespace: PEOPLE,
        body: object('Directory', PEOPLE, `dir-${String(d).padStart(3, '0')}`, { entities: entities(d, 0) }),
      })),
    ],
    'directories',
  );
}

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
const [port, opsPort] = [await freePort(), await freePort()];
const stateDir = mkdtempSync(join(tmpdir(), 'acl-steady-kube-'));
const started = performance.now();
const child = spawn(
  'taskset',
  [
    '-c',
    String(SERVER_CORE),
    process.execPath,
    '--max-old-space-size=4096',
    join(ROOT, 'src', 'cli.ts'),
    'serve',
    '--kubeconfig',
    KUBECONFIG,
    '--insecure-http',
    '--listen',
    `127.0.0.1:${port}`,
    '--ops-listen',
    `127.0.0.1:${opsPort}`,
    '--console-listen',
    '127.0.0.1:0',
    '--operator-namespace',
    OPS_NS,
    '--identity',
    'bench-steady',
    '--namespaces',
    DIRECTORY ? `${NS},${PEOPLE}` : NS,
    '--state-dir',
    stateDir,
    '--log-level',
    'warn',
  ],
  { stdio: ['ignore', 'inherit', 'inherit'] },
);
try {
  await waitFor(
    'the operator to be ready',
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${opsPort}/readyz`)).status === 200;
      } catch {
        return false;
      }
    },
    600_000,
  );
  console.log(
    `operator ready with 10,000 rules${DIRECTORY ? ' and 500,000 Directory entities' : ''} in ${fmt(performance.now() - started)} ms`,
  );
  // Ready comes before a first start's status writes (10,000 of them, and their watch echoes): the
  // quiet runs start once the writes have stopped for 3 s.
  const statusWrites = async (): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
    return [...text.matchAll(/^acl_status_writes_total\{[^}]*\} (\S+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
  };
  for (let before = -1, now = await statusWrites(); now !== before; before = now, now = await statusWrites()) await sleep(3000);
  progress('status writes done');
  const token = await waitFor('the connector token', () => readToken(NS, 'opa'), 60_000);
  const peopleToken = DIRECTORY ? await waitFor('the people connector token', () => readToken(PEOPLE, 'opa'), 60_000) : '';
  const replace = async (namespace: string, plural: string, name: string, spec: Record<string, unknown>): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const current = (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name })) as Record<
        string,
        unknown
      >;
      try {
        await custom.replaceNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name, body: { ...current, spec } });
        return;
      } catch (err) {
        if (statusOf(err) !== 409 || attempt >= 10) throw err;
      }
    }
  };
  const loadgen = await startLoadgen();
  // A run number keeps a kept namespace's edits new: the same edit twice changes nothing.
  const run = Date.now() % 1_000_000;
  const result = await measureSteady({
    loadgen,
    port,
    requests: decisionBodies(rules, 2000, 7).map(decisionRequest),
    runS: RUN_S,
    warmupS: QUICK ? 1 : 3,
    rules: {
      port,
      path: `/${NS}/connectors/policyagent/opa/bundles/all`,
      token,
      edit: (n) =>
        replace(NS, 'rules', (rules[n % rules.length] as (typeof rules)[number]).name, ruleSpec(n % rules.length, run * 1000 + n)),
    },
    directory: DIRECTORY
      ? {
          port,
          path: `/${PEOPLE}/connectors/policyagent/opa/bundles/all`,
          token: peopleToken,
          edit: (n) => replace(PEOPLE, 'directories', 'dir-000', { entities: entities(0, run * 1000 + n) }),
        }
      : undefined,
  });
  await loadgen.stop();
  console.log('');
  for (const line of report(result, RUN_S, 'replace returned → new ETag served')) console.log(line);
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  rmSync(stateDir, { recursive: true, force: true });
  if (!KEEP) {
    progress('deleting the namespaces (BENCH_KEEP=1 keeps them)');
    for (const name of [NS, PEOPLE, OPS_NS]) await core.deleteNamespace({ name }).catch(() => undefined);
  }
}
