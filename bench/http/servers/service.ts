// The real service (startService, as `acl-operator serve --insecure-http` runs it) over a temporary
// manifests folder holding `--rules N` generated rules, an API key, a Connector and a Bundle.
//   node bench/http/servers/service.ts --rules 10000
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { configFromFlags } from '../../../src/config.ts';
import { LOCAL_LISTENERS } from '../../../test/support/service.ts';
import { startService } from '../../../src/modes/index.ts';
import { serveCommands } from '../ipc.ts';
import { CONNECTOR, generateRules, manifestFiles, ruleManifest, TENANT, tenantRules } from '../tenant.ts';
import { startProfile, stopProfile } from './profiler.ts';
import { collectGarbage, epochMs, processStats, type ServerCommands } from './stats.ts';

export interface ServiceReady {
  readonly port: number;
  /** The connector token, read from the state folder's tokens/<tenant>/<connector> file as OPA would. */
  readonly token: string;
  readonly rules: number;
  readonly startMs: number;
}

export type ServiceCommands = ServerCommands & {
  /**
   * Adds a rule to the folder and re-reads it, so the bundle changes. Times are epoch ms; published
   * is stamped by a store listener that runs after the service's own, which release held polls.
   */
  change: { arg: null; result: { receivedMs: number; publishedMs: number } };
};

const { values } = parseArgs({ options: { rules: { type: 'string', default: '10' } } });
const ruleCount = Number(values.rules);
const rules = tenantRules(ruleCount);

const root = await mkdtemp(join(tmpdir(), 'acl-bench-'));
const manifests = join(root, 'manifests');
await mkdir(manifests, { recursive: true });
for (const [file, text] of Object.entries(manifestFiles(rules))) await writeFile(join(manifests, file), text);

const config = configFromFlags(['--manifests', manifests, '--state-dir', join(root, 'state'), ...LOCAL_LISTENERS, '--log-level', 'silent']);
const started = performance.now();
// The folder is re-read only on `change`, so the measured runs see no background rescans or flushes.
// settleMs 0: `change` writes the file whole before the rescan, so the measured time is the rebuild,
// not the wait for a file to hold still (with the default 300 ms the rescan did not yet use the new
// file, nothing was published before `change` returned, and the figure came out negative).
const service = await startService(config, {
  log: pino({ level: 'silent' }),
  activityFlushMs: 3_600_000,
  debounceMs: 3_600_000,
  settleMs: 0,
});
const startMs = performance.now() - started;

let publishedMs = 0;
service.store.onBundleChange(() => {
  publishedMs = epochMs();
});
let changes = 0;

const ready: ServiceReady = {
  port: Number(new URL(service.apiUrl).port),
  token: (await readFile(service.state.tokenFile(TENANT, CONNECTOR), 'utf8')).trim(),
  rules: ruleCount,
  startMs,
};

serveCommands<ServiceCommands>(
  {
    stats: () => processStats(service.longPolls.size()),
    gcStats: () => {
      collectGarbage();
      return processStats(service.longPolls.size());
    },
    startProfile,
    stopProfile,
    async change() {
      const receivedMs = epochMs();
      const extra = generateRules(1, 1_000_000 + changes)[0]!;
      await writeFile(join(manifests, 'change.yaml'), ruleManifest({ ...extra, name: `changed-${changes++}` }));
      await service.source.rescan();
      await service.controller.idle();
      return { receivedMs, publishedMs };
    },
  },
  ready,
  async () => {
    await service.stop();
    await rm(root, { recursive: true, force: true });
  },
);
