// Where the service's time goes under an OPA fleet's load (the rows of bench/fleet.ts), or under
// saturated decisions with the decision log to a file (the decideLog variant of bench/http.ts): the
// server and the load pinned as in the benchmarks, a warm-up, then a CPU profile of the server's
// window under load, summarised as bench/http/profile.ts does.
//   node bench/fleet/profile.ts reports|fleet|fleet-log [seconds]    1,000 agents (default 30 s)
//   node bench/fleet/profile.ts decide-log|decide [seconds]          50 connections, saturated (default 10 s);
//                                                                    decide: the same server, decision log off
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOADGEN_CORE, SERVER_CORE } from '../http/cores.ts';
import { summariseProfile, type Profile } from '../http/cpuprofile.ts';
import { spawnPinned } from '../http/ipc.ts';
import type { HttpRequest } from '../http/load.ts';
import type { FleetServiceCommands, FleetServiceReady } from '../http/servers/fleet-service.ts';
import { API_KEY, decisionBodies, tenantRules } from '../http/tenant.ts';
import { startLoadgen } from '../http/variants.ts';
import type { AgentCommands } from './agents.ts';
import { threadTimes } from './cpu.ts';

const MODES = ['reports', 'fleet', 'fleet-log', 'decide-log', 'decide'] as const;
type Mode = (typeof MODES)[number];
const [what, arg] = process.argv.slice(2);
if (!MODES.includes(what as Mode)) {
  console.error(`usage: node bench/fleet/profile.ts <${MODES.join('|')}> [seconds]`);
  process.exit(2);
}
const mode = what as Mode;
const decisions = mode === 'decide-log' || mode === 'decide';
const seconds = Number(arg ?? (decisions ? 10 : 30));
const script = (name: string): string => fileURLToPath(new URL(name, import.meta.url));

// decide-log runs the server as the bench/http.ts variant does (nothing in the background); the
// fleet modes as bench/fleet.ts does (default timers, log at info).
const serverArgs = decisions
  ? ['--decision-log', mode === 'decide-log' ? 'file' : 'off', '--timers', 'off', '--log-level', 'silent']
  : ['--decision-log', mode === 'fleet-log' ? 'file' : 'off', '--log-level', 'info'];
const server = await spawnPinned<FleetServiceCommands, FleetServiceReady>(SERVER_CORE, script('../http/servers/fleet-service.ts'), [
  '--rules',
  '10',
  ...serverArgs,
]);
const file = join(tmpdir(), `acl-bench-fleet-${mode}-${Date.now()}.cpuprofile`);

let done: string;
// The profile shows the JavaScript thread only; /proc shows every thread's CPU (GC helpers, libuv's pool).
let threads0 = new Map<string, number>();
let threads1 = new Map<string, number>();
if (decisions) {
  const loadgen = await startLoadgen();
  const requests: HttpRequest[] = decisionBodies(tenantRules(10), 2_000, 1).map((body) => ({
    method: 'POST',
    path: '/authorization',
    body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` },
  }));
  const spec = { port: server.ready.port, requests, connections: 50, durationS: 3 };
  await loadgen.call('saturate', spec);
  await server.call('startProfile', null);
  threads0 = await threadTimes(server.pid);
  const result = await loadgen.call('saturate', { ...spec, durationS: seconds });
  threads1 = await threadTimes(server.pid);
  await server.call('stopProfile', file);
  await loadgen.stop();
  done =
    `POST /authorization, decision log ${mode === 'decide-log' ? 'to a file' : 'off'}: ` +
    `${Math.round(result.rps)} req/s under the profiler (it slows the server down)`;
} else {
  const agents = await spawnPinned<AgentCommands, unknown>(LOADGEN_CORE, script('./agents.ts'));
  await agents.call('prepare', { key: mode, agents: 1_000, token: server.ready.token, revision: server.ready.revision, events: 100 });
  await agents.call('start', { key: mode, port: server.ready.port, periodS: 10, uploads: mode !== 'reports' });
  await new Promise((resolve) => setTimeout(resolve, 15_000));
  await server.call('startProfile', null);
  await agents.call('mark', null);
  threads0 = await threadTimes(server.pid);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  threads1 = await threadTimes(server.pid);
  await server.call('stopProfile', file);
  const w = await agents.call('collect', null);
  await agents.call('stop', null);
  await agents.stop();
  done =
    `${mode}: ${(w.status.answered / w.durationS).toFixed(1)} reports/s, ${(w.logs.answered / w.durationS).toFixed(1)} uploads/s under the profiler; ` +
    `p99 ${w.status.p99Ms.toFixed(1)} ms (reports), ${w.logs.p99Ms.toFixed(1)} ms (uploads)`;
}
await server.stop();
console.log(`${done}; profile ${file}`);
const used = [...threads1]
  .map(([name, us]) => [name, us - (threads0.get(name) ?? 0)] as const)
  .filter(([, us]) => us > 0)
  .sort((a, b) => b[1] - a[1]);
console.log(
  `Server CPU by thread over the profiled ${seconds} s (/proc, all threads, profiler included): ` +
    used.map(([name, us]) => `${name} ${((100 * us) / (seconds * 1e6)).toFixed(1)}%`).join(', '),
);
for (const line of summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as Profile, 30)) console.log(line);
process.exit(0);
