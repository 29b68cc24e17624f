// The service under test (standalone, the real startService with its folder watch, debounce and
// settle interval) over a folder the benchmark driver edits from another process.
//   node bench/steady/server.ts --folder <dir> [--settle-ms 300] [--debounce-ms 100]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { configFromFlags } from '../../src/config.ts';
import { LOCAL_LISTENERS } from '../../test/support/service.ts';
import { startService } from '../../src/modes/index.ts';
import { serveCommands } from '../http/ipc.ts';
import { CONNECTOR, TENANT } from '../http/tenant.ts';
import { startProfile, stopProfile } from '../http/servers/profiler.ts';
import { processStats, type ServerStats } from '../http/servers/stats.ts';

export interface SteadyReady {
  readonly port: number;
  readonly token: string;
  readonly startMs: number;
}
export type SteadyCommands = {
  stats: { arg: null; result: ServerStats & { loopBusyMs: number } };
  startProfile: { arg: null; result: null };
  stopProfile: { arg: string; result: null };
};

const { values } = parseArgs({
  options: {
    folder: { type: 'string' },
    state: { type: 'string' },
    'settle-ms': { type: 'string', default: '300' },
    'debounce-ms': { type: 'string', default: '100' },
  },
});
if (!values.folder || !values.state) throw new Error('--folder and --state are required');
const config = configFromFlags(['--manifests', values.folder, '--state-dir', values.state, ...LOCAL_LISTENERS, '--log-level', 'silent']);
const started = performance.now();
const service = await startService(config, {
  log: pino({ level: 'silent' }),
  activityFlushMs: 3_600_000,
  settleMs: Number(values['settle-ms']),
  debounceMs: Number(values['debounce-ms']),
});
const ready: SteadyReady = {
  port: Number(new URL(service.apiUrl).port),
  token: (await readFile(service.state.tokenFile(TENANT, CONNECTOR), 'utf8')).trim(),
  startMs: performance.now() - started,
};
serveCommands<SteadyCommands>(
  {
    stats: () => ({ ...processStats(service.longPolls.size()), loopBusyMs: performance.eventLoopUtilization().active }),
    startProfile,
    stopProfile,
  },
  ready,
  () => service.stop(),
);
