// One measured window of one row of bench/fleet.ts: the row's server alone on its core (the others
// paused), the agents' load started, a settle period, then the window, with the server's CPU (all
// threads, user and system apart, and its JavaScript thread) and each core's busy time read from
// /proc at both ends.
import { createReadStream } from 'node:fs';
import { stat, truncate } from 'node:fs/promises';
import { LOADGEN_CORE, SERVER_CORE } from '../http/cores.ts';
import type { Pinned } from '../http/ipc.ts';
import { coreBusyUs, processCpuUs } from '../http/procfs.ts';
import { fmt } from '../http/report.ts';
import type { FleetCounters, FleetServiceCommands, FleetServiceReady, LoopDelay } from '../http/servers/fleet-service.ts';
import type { AgentCommands, FleetFigures, Kind } from './agents.ts';
import { mainThreadUs, processTimes } from './cpu.ts';

export type Server = Pinned<FleetServiceCommands, FleetServiceReady>;

export interface Row {
  readonly key: string;
  readonly label: string;
  readonly server: Server;
  readonly load: 'none' | 'reports' | 'uploads';
}

export interface Sample {
  /** Server CPU over the window, as a share of one core. */
  readonly cpu: number;
  /** The part of it spent in the kernel. */
  readonly system: number;
  /** The part of it on the JavaScript thread. */
  readonly mainThread: number;
  readonly windowS: number;
  /** The agents' figures over the window, and over the whole run (settle and window). */
  readonly window: FleetFigures | undefined;
  readonly total: FleetFigures | undefined;
  /** The agents' process CPU over the window, as a share of its core. */
  readonly loadgenCpu: number;
  readonly otherLoad: { readonly serverCore: number; readonly loadCore: number };
  /** The service's counters before and after the run. */
  readonly before: FleetCounters;
  readonly after: FleetCounters;
  /** Lines found in the decision log file after the run (settle and window). */
  readonly logLines: number | undefined;
  /** How late the service's event loop ran over the window. */
  readonly loop: LoopDelay;
}

export interface RunnerOptions {
  readonly rows: readonly Row[];
  readonly agents: Pinned<AgentCommands, unknown>;
  readonly periodS: number;
  readonly settleS: number;
  readonly windowS: number;
}

export interface Runner {
  /** Load on the row's server for `seconds`, unmeasured. */
  warm(row: Row, seconds: number): Promise<void>;
  measure(row: Row): Promise<Sample>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Lines in the decision log once the service has written what it buffered (its size stops moving); then empties it. */
async function drainDecisionLog(file: string): Promise<number> {
  let size = -1;
  for (let stable = 0, tries = 0; stable < 3 && tries < 100; tries++) {
    await sleep(100);
    const now = (await stat(file)).size;
    stable = now === size ? stable + 1 : 0;
    size = now;
  }
  let lines = 0;
  for await (const chunk of createReadStream(file)) {
    const bytes = chunk as Buffer;
    for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) lines++;
  }
  // The service appends (O_APPEND): its next line lands at the start of the emptied file.
  await truncate(file, 0);
  return lines;
}

export function createRunner(o: RunnerOptions): Runner {
  const { agents } = o;
  /** Runs `run` with every other server paused (an idle server is not idle to its core, see bench/http/rounds.ts). */
  async function alone<T>(row: Row, run: () => Promise<T>): Promise<T> {
    const others = o.rows.filter((r) => r !== row).map((r) => r.server.pid);
    for (const pid of others) process.kill(pid, 'SIGSTOP');
    try {
      return await run();
    } finally {
      for (const pid of others) process.kill(pid, 'SIGCONT');
    }
  }
  const startLoad = async (row: Row): Promise<void> => {
    if (row.load === 'none') return;
    await agents.call('start', { key: row.key, port: row.server.ready.port, periodS: o.periodS, uploads: row.load === 'uploads' });
  };
  const readings = (row: Row) =>
    Promise.all([processTimes(row.server.pid), mainThreadUs(row.server.pid), processCpuUs(agents.pid), coreBusyUs()]);

  return {
    async warm(row, seconds) {
      await alone(row, async () => {
        await startLoad(row);
        await sleep(seconds * 1000);
        if (row.load !== 'none') await agents.call('stop', null);
      });
      if (row.server.ready.decisionLog) await drainDecisionLog(row.server.ready.decisionLog);
    },

    measure: (row) =>
      alone(row, async (): Promise<Sample> => {
        const before = await row.server.call('counters', null);
        await startLoad(row);
        await sleep(o.settleS * 1000);
        if (row.load !== 'none') await agents.call('mark', null);
        await row.server.call('loopDelay', null);
        const [cpu0, js0, load0, busy0] = await readings(row);
        const self0 = process.cpuUsage();
        const t0 = performance.now();
        await sleep(o.windowS * 1000);
        const [cpu1, js1, load1, busy1] = await readings(row);
        const wallUs = (performance.now() - t0) * 1000;
        const self = process.cpuUsage(self0);
        const loop = await row.server.call('loopDelay', null);
        const window = row.load === 'none' ? undefined : await agents.call('collect', null);
        const total = row.load === 'none' ? undefined : await agents.call('stop', null);
        const file = row.server.ready.decisionLog;
        const logLines = file === undefined ? undefined : await drainDecisionLog(file);
        const after = await row.server.call('counters', null);
        const busy = (core: number): number => (busy1[core] ?? 0) - (busy0[core] ?? 0);
        const systemUs = cpu1.systemUs - cpu0.systemUs;
        const serverUs = cpu1.userUs - cpu0.userUs + systemUs;
        const loadUs = load1 - load0;
        return {
          cpu: serverUs / wallUs,
          system: systemUs / wallUs,
          mainThread: (js1 - js0) / wallUs,
          windowS: wallUs / 1e6,
          window,
          total,
          loadgenCpu: loadUs / wallUs,
          before,
          after,
          logLines,
          loop,
          otherLoad: {
            serverCore: Math.max(0, busy(SERVER_CORE) - serverUs) / wallUs,
            // This process runs on the load core too.
            loadCore: Math.max(0, busy(LOADGEN_CORE) - loadUs - self.user - self.system) / wallUs,
          },
        };
      }),
  };
}

/** Why a window's load was not what was asked (`rate` requests per second of each kind), if it was not. */
export function loadProblems(row: Row, s: Sample, rate: number): string[] {
  const w = s.window;
  if (w === undefined) return [];
  const problems: string[] = [];
  const kinds: Kind[] = row.load === 'uploads' ? ['status', 'logs'] : ['status'];
  for (const k of kinds) {
    const what = k === 'status' ? 'reports' : 'uploads';
    // Over a window the schedule holds rate × window requests, give or take the phases at its edges.
    if (w[k].sent < 0.99 * w[k].due) problems.push(`${fmt(w[k].sent)} ${what} sent of ${fmt(w[k].due)} due`);
    if (w[k].due < 0.9 * rate * w.durationS) problems.push(`${fmt(w[k].due)} ${what} due in ${fmt(w.durationS, 1)} s`);
  }
  if (w.lateP99Ms > 20) problems.push(`writes ${fmt(w.lateP99Ms, 1)} ms late at p99 (max ${fmt(w.lateMaxMs)} ms)`);
  if (s.loadgenCpu > 0.8) problems.push(`the agents' process used ${fmt(s.loadgenCpu * 100)}% of its core`);
  return problems;
}
