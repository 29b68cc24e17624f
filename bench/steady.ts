// Steady under change, standalone (make bench-steady): what a policy rollout does to the decisions
// being answered. The real service (its folder watch, debounce and settle interval as shipped) runs
// pinned to core 0 with 10,000 rules in one file; the load generator and this driver, which edits
// the folder from another process as a user would, run on core 1. Figures are ratios against the
// quiet runs of the same process. Not a test: a missed goal prints MISS.
//   node bench/steady.ts                     10,000 rules, one edited every second
//   BENCH_DIRECTORY=1 node bench/steady.ts   plus a tenant of 500,000 Directory entities, one edited every second
//   BENCH_QUICK=1 ...                        3 s runs (a smoke check, not figures to quote)
// The Kubernetes mode of the same runs: bench/steady/kube.ts (make bench-steady-kube).
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pinToLoadCore, SERVER_CORE } from './http/cores.ts';
import { spawnPinned, type Pinned } from './http/ipc.ts';
import { fmt, machine } from './http/report.ts';
import { BUNDLE_PATH, decisionBodies } from './http/tenant.ts';
import { decisionRequest, startLoadgen } from './http/variants.ts';
import { currentEtag, max, measureSteady, median, nextEtag, report, verdict } from './steady/measure.ts';
import type { SteadyCommands, SteadyReady } from './steady/server.ts';
import { DIRECTORY_TENANT, directoryFile, rulesFile, tenantRules, writeFolder } from './steady/tenants.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const DIRECTORY = process.env['BENCH_DIRECTORY'] === '1';
const RUN_S = QUICK ? 3 : 10;
const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

console.log(
  `acl-operator steady-under-change benchmark, standalone, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check)' : ''}`,
);
console.log(`machine: ${machine()}`);
pinToLoadCore();

const root = await mkdtemp(join(tmpdir(), 'acl-steady-'));
const rules = tenantRules(10_000);
type Server = Pinned<SteadyCommands, SteadyReady>;

async function startServer(name: string, args: readonly string[], directory: boolean): Promise<{ server: Server; folder: string }> {
  const folder = join(root, name, 'manifests');
  await mkdir(folder, { recursive: true });
  await writeFolder(folder, rules, directory);
  const server = await spawnPinned<SteadyCommands, SteadyReady>(
    SERVER_CORE,
    fileURLToPath(new URL('./steady/server.ts', import.meta.url)),
    ['--folder', folder, '--state', join(root, name, 'state'), ...args],
    ['--max-old-space-size=4096'],
  );
  return { server, folder };
}

try {
  progress(`writing the folder${DIRECTORY ? ' (with 500,000 Directory entities)' : ''} and starting the service`);
  const loadgen = await startLoadgen();
  const main = await startServer('main', [], DIRECTORY);
  console.log(
    `service started with 10,000 rules${DIRECTORY ? ' and 500,000 Directory entities' : ''} in ${fmt(main.server.ready.startMs)} ms (settle interval 300 ms, debounce 100 ms)`,
  );
  const { port, token } = main.server.ready;
  const edits = Array.from({ length: 40 }, (_, n) => rulesFile(rules, n + 1));
  const result = await measureSteady({
    loadgen,
    port,
    requests: decisionBodies(rules, 2000, 7).map(decisionRequest),
    runS: RUN_S,
    warmupS: QUICK ? 1 : 3,
    // The edited files are made before the runs: the driver shares its core with the load generator.
    rules: { port, path: BUNDLE_PATH, token, edit: (n) => writeFile(join(main.folder, 'rules.yaml'), edits[n % edits.length] as string) },
    directory: DIRECTORY
      ? {
          port,
          path: `/${DIRECTORY_TENANT}/connectors/policyagent/opa/bundles/all`,
          token: (await readFile(join(root, 'main', 'state', 'tokens', DIRECTORY_TENANT, 'opa'), 'utf8')).trim(),
          edit: (n) => writeFile(join(main.folder, 'dir-000.yaml'), directoryFile(0, n)),
        }
      : undefined,
  });
  await main.server.stop();

  // The pipeline alone: a second service with no debounce and no settle interval, one edit at a time.
  progress('rule edit to served without debounce and settle interval, one at a time');
  const quick = await startServer('pipeline', ['--settle-ms', '0', '--debounce-ms', '0'], false);
  const pipeline: number[] = [];
  for (let n = 1; n <= (QUICK ? 5 : 20); n++) {
    const etag = await currentEtag(quick.server.ready.port, BUNDLE_PATH, quick.server.ready.token);
    const waiting = nextEtag(quick.server.ready.port, BUNDLE_PATH, quick.server.ready.token, etag);
    const t0 = performance.now();
    await writeFile(join(quick.folder, 'rules.yaml'), rulesFile(rules, n));
    pipeline.push((await waiting).atMs - t0);
  }
  await quick.server.stop();
  await loadgen.stop();

  console.log('');
  for (const line of report(result, RUN_S, 'file written → new ETag served; debounce 100 ms and settle 300 ms included')) console.log(line);
  const pm = median(pipeline);
  console.log(
    `goal rule edit to served < 100 ms, without debounce and settle (--settle-ms 0): median ${fmt(pm)} ms, max ${fmt(max(pipeline))} ms ${verdict(pm < 100)}`,
  );
} finally {
  await rm(root, { recursive: true, force: true });
}
