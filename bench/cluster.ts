// Cluster benchmark (make bench-cluster, not part of make bench): acl-operator in real pods, on a
// cluster whose node runs them (CLUSTER_KUBECONFIG; make cluster-up), installed as the cluster tier
// installs it, the tier's application deciding and polling meanwhile. Its parts (BENCH_PARTS, all by
// default), each against a baseline of the same run:
//   decisions  through the Service at saturation against the same build outside the cluster (decisions.ts)
//   failover   the leader pod deleted: the time without a leader, failed requests (failover.ts)
//   fleet      simulated OPA agents reporting and uploading decisions: memory per fleet size (fleet.ts)
//   directory  Directory entities in one tenant: memory per entity count (directory.ts)
//   rules      tenants of 100 Rules: memory per object up to the limit, a restart with all present (rules.ts)
//   combined   the documented size all at once (Rules, Directory entities, agents), and a restart with it
//   BENCH_ROUNDS=3 (decision and failover rounds), BENCH_SECONDS=10, BENCH_MAX_TENANTS=300,
//   BENCH_AGENTS=500,1000,2000, BENCH_ENTITIES=50000,100000,200000,300000,500000.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { adaptForServer, cleanSlate, prepareInstallFolder } from '../test/cluster/setup.ts';
import { CLUSTER_KUBECONFIG, IMAGE, kubectl, kubectlJson, OPERATOR_NS, ROOT, run, say } from '../test/cluster/support.ts';
import { loadManifest, mb, restartsAndKills, TENANT } from '../test/cluster/workload.ts';
import { decisionReport, measureDecisions } from './cluster/decisions.ts';
import { directoryMemory } from './cluster/directory.ts';
import { failoverReport, measureFailover } from './cluster/failover.ts';
import { fleetMemory } from './cluster/fleet.ts';
import { freshReplicas, LIMIT_BYTES, readMemory } from './cluster/memory.ts';
import { createTenants, measureRules, restartOne, rulesReport } from './cluster/rules.ts';
import { fmt, machine, table } from './http/report.ts';

if (!CLUSTER_KUBECONFIG) {
  process.stderr.write('bench-cluster needs CLUSTER_KUBECONFIG: a cluster whose node runs pods, the image loaded (make cluster-up)\n');
  process.exit(2);
}
const list = (name: string, fallback: string) =>
  (process.env[name] || fallback)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const PARTS = new Set(list('BENCH_PARTS', 'decisions,failover,fleet,directory,combined,rules'));
const ROUNDS = Number(process.env['BENCH_ROUNDS']) || 3;
const SECONDS = Number(process.env['BENCH_SECONDS']) || 10;
const MAX_TENANTS = Number(process.env['BENCH_MAX_TENANTS']) || 300;
const AGENTS = list('BENCH_AGENTS', '500,1000,2000').map(Number);
const ENTITIES = list('BENCH_ENTITIES', '50000,100000,200000,300000,500000').map(Number);
const kc = new KubeConfig();
kc.loadFromFile(CLUSTER_KUBECONFIG);
const log = (line: string) => process.stdout.write(`${line}\n`);
const report: string[] = [];

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

log(`acl-operator cluster benchmark, ${new Date().toISOString()}; parts: ${[...PARTS].join(', ')}`);
log(`machine: ${machine()}`);
log(
  `cluster: ${(JSON.parse(await kubectl(['version', '-o', 'json'])) as { serverVersion?: { gitVersion?: string } }).serverVersion?.gitVersion}, image ${IMAGE}`,
);

if (PARTS.has('decisions')) {
  const o = { apiKey, seconds: SECONDS, rounds: ROUNDS, log };
  report.push('', ...decisionReport(o, await measureDecisions(o)));
}
if (PARTS.has('failover')) {
  const o = { rounds: ROUNDS, log };
  report.push('', ...failoverReport(o, await measureFailover(kc, o)));
}
if (PARTS.has('fleet')) {
  await freshReplicas();
  const base = await readMemory();
  const rows = [];
  for (const agents of AGENTS) {
    await freshReplicas(); // the agents of the step before would still be counted until they expire
    const row = await fleetMemory(agents, 60);
    rows.push(row);
    log(
      `  ${fmt(agents)} agents: cgroup ${mb(row.cgroup)}, RSS ${mb(row.rss)}, ${fmt(row.answered)} requests answered in the minute, ${fmt(row.failed)} failed, restarts ${row.restarts}`,
    );
    if (row.restarts > 0 || row.cgroup > 0.8 * LIMIT_BYTES) break;
  }
  report.push(
    '',
    'OPA agents reporting (status every 10 s, 100 decisions uploaded every 10 s each; memory of the larger replica after a minute of it)',
  );
  for (const line of table(
    ['agents', 'decisions uploaded/s', 'cgroup', 'RSS', 'requests answered', 'failed', 'restarts'],
    [
      ['0', '', mb(base.cgroup), mb(base.rss), '', '', ''],
      ...rows.map((r) => [
        fmt(r.agents),
        fmt(r.decisionsPerSecond),
        mb(r.cgroup),
        mb(r.rss),
        fmt(r.answered),
        fmt(r.failed),
        fmt(r.restarts),
      ]),
    ],
  ))
    report.push(`  ${line}`);
}
if (PARTS.has('directory')) {
  await freshReplicas();
  const base = await readMemory();
  const rows = await directoryMemory(kc, ENTITIES, LIMIT_BYTES, log);
  report.push(
    '',
    "Directory entities (one tenant, its Bundle embedding each user's team; the larger replica 15 s after the Bundle carried them)",
  );
  for (const line of table(
    ['entities', 'added in', 'cgroup', 'RSS', 'per entity (RSS)', 'restarts'],
    [
      ['0', '', mb(base.cgroup), mb(base.rss), '', ''],
      ...rows.map((r) => [
        fmt(r.entities),
        `${fmt(r.seconds)} s`,
        mb(r.cgroup),
        mb(r.rss),
        `${fmt((r.rss - base.rss) / r.entities, 0)} B`,
        fmt(r.restarts),
      ]),
    ],
  ))
    report.push(`  ${line}`);
}
// The documented size of the shipped Deployment, all at once: 10,000 Rules in 100 tenants, 500 OPA
// agents reporting and uploading 5,000 decisions/s, 20,000 Directory entities; then a restart with all of it.
if (PARTS.has('combined')) {
  await freshReplicas();
  const base = await readMemory();
  const created = await createTenants(KubernetesObjectApi.makeApiClient(kc), 0, 100);
  log(`  combined: 10,200 objects created and built in ${fmt(created)} s`);
  await directoryMemory(kc, [20_000], LIMIT_BYTES, log, true);
  const fleet = await fleetMemory(500, 60); // memory read while the agents report
  const restart = await restartOne();
  const after = await readMemory();
  const { restarts, oomKilled } = await restartsAndKills();
  const pct = (b: number) => `${fmt((100 * b) / LIMIT_BYTES)} %`;
  report.push(
    '',
    'The documented size, all at once: 10,000 Rules (100 tenants), 20,000 Directory entities, 500 OPA agents uploading 5,000 decisions/s',
  );
  for (const line of table(
    ['reading', 'cgroup', 'RSS', 'of the 512Mi limit', 'limit ÷ usage'],
    [
      ['the example tenant only', mb(base.cgroup), mb(base.rss), pct(base.cgroup), fmt(LIMIT_BYTES / base.cgroup, 2)],
      ['all of it, the agents reporting', mb(fleet.cgroup), mb(fleet.rss), pct(fleet.cgroup), fmt(LIMIT_BYTES / fleet.cgroup, 2)],
      [
        `a replica restarted with all of it: peak (Ready in ${fmt(restart.readyS)} s)`,
        mb(restart.peak),
        '',
        pct(restart.peak),
        fmt(LIMIT_BYTES / restart.peak, 2),
      ],
      ['after the restart, agents gone', mb(after.cgroup), mb(after.rss), pct(after.cgroup), fmt(LIMIT_BYTES / after.cgroup, 2)],
    ],
  ))
    report.push(`  ${line}`);
  report.push(
    `  restarts ${restarts}, OOMKilled ${oomKilled}; agents' requests ${fmt(fleet.answered)} answered, ${fmt(fleet.failed)} failed`,
  );
  await run('kubectl', ['delete', 'namespace', '-l', 'acl-cluster-tier=true', '--wait=true'], { timeoutMs: 1_800_000 });
}
if (PARTS.has('rules')) {
  await freshReplicas();
  report.push('', ...rulesReport(await measureRules(kc, { maxTenants: MAX_TENANTS, log })));
}

for (const line of report) log(line);
await run('kubectl', ['delete', 'namespace', '-l', 'acl-cluster-tier=true', '--wait=false']);
say(
  `the sizing namespaces are being deleted; the operator stays installed in ${OPERATOR_NS} (make test-cluster starts from a clean slate)`,
);
