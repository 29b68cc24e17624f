// The simulated OPA fleet, a child on the load core (started by bench/fleet.ts): every agent keeps
// its own keep-alive connections, as OPA's HTTP client (Go's Transport) does: a request takes an idle
// one, or opens another when the agent's only one is busy (its report and its upload fell due close
// together). Each agent sends its status report every period and, when asked, its decision-log
// upload every period, each at its own seeded phase. Latency runs from the write of a request to its
// response; how late each write was against its schedule is reported apart, so a load generator that
// falls behind shows as such rather than as a slow server.
import { connect, type Socket } from 'node:net';
import { rng } from '../generate.ts';
import { serveCommands } from '../http/ipc.ts';
import { latencyRecorder, percentile } from '../http/load.ts';
import { responseReader } from '../http/responses.ts';
import { fleetRequests, type AgentRequests, type FleetOptions } from './uploads.ts';

export type Kind = 'status' | 'logs';

export interface KindFigures {
  /** Requests whose scheduled time fell in the period. */
  readonly due: number;
  readonly sent: number;
  readonly answered: number;
  readonly statusCodes: Readonly<Record<string, number>>;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface FleetFigures {
  readonly durationS: number;
  readonly status: KindFigures;
  readonly logs: KindFigures;
  /** Connections that failed or closed with a request on them. */
  readonly errors: number;
  /** Connections opened after the start: an agent's were all busy, or the server had closed one. */
  readonly opened: number;
  /** How late writes were against their schedule (timer precision, or a generator falling behind). */
  readonly lateP99Ms: number;
  readonly lateMaxMs: number;
  /** Requests written and not yet answered when the figures were taken. */
  readonly inFlight: number;
}

export interface PrepareArg extends Omit<FleetOptions, 'seed'> {
  /** Which server these requests are for (each has its own connector token). */
  readonly key: string;
}

export interface StartArg {
  readonly key: string;
  readonly port: number;
  readonly periodS: number;
  /** Send decision-log uploads too, not only status reports. */
  readonly uploads: boolean;
}

export type AgentCommands = {
  /** Builds (once per server) every agent's requests; returns the body sizes. */
  prepare: { arg: PrepareArg; result: { statusBodyBytes: number; logsBodyBytes: number; logsJsonBytes: number } };
  /** Connects every agent and starts their schedules. */
  start: { arg: StartArg; result: { connectMs: number } };
  /** Starts a measured window. */
  mark: { arg: null; result: null };
  /** The figures of the window since `mark`. */
  collect: { arg: null; result: FleetFigures };
  /** Stops the schedules, waits for what is in flight, closes the connections; figures since `start`. */
  stop: { arg: null; result: FleetFigures };
};

/** Phases, status and upload schedules are the same for every server and every run. */
const SEED = 20_261_124;
/** Connections opened at once (the server's listen backlog is 511). */
const CONNECT_BATCH = 200;

interface Connection {
  readonly socket: Socket;
  /** The request on the connection, if any. */
  current: { readonly kind: Kind; readonly sentAt: number } | undefined;
}

interface Agent {
  readonly requests: AgentRequests;
  readonly idle: Connection[];
  readonly open: Set<Connection>;
}

interface Counts {
  readonly latencies: Record<Kind, ReturnType<typeof latencyRecorder>>;
  readonly due: Record<Kind, number>;
  readonly sent: Record<Kind, number>;
  readonly statusCodes: Record<Kind, Record<string, number>>;
  readonly late: ReturnType<typeof latencyRecorder>;
  errors: number;
  opened: number;
  readonly t0: number;
}

const counts = (): Counts => ({
  latencies: { status: latencyRecorder(), logs: latencyRecorder() },
  due: { status: 0, logs: 0 },
  sent: { status: 0, logs: 0 },
  statusCodes: { status: {}, logs: {} },
  late: latencyRecorder(),
  errors: 0,
  opened: 0,
  t0: performance.now(),
});

/** A percentile, 0 without samples (figures cross the IPC channel as JSON, where NaN becomes null). */
const at = (sorted: Float64Array, p: number): number => (sorted.length === 0 ? 0 : percentile(sorted, p));

function figures(c: Counts, inFlight: number): FleetFigures {
  const kind = (k: Kind): KindFigures => {
    const sorted = c.latencies[k].sorted();
    return {
      due: c.due[k],
      sent: c.sent[k],
      answered: sorted.length,
      statusCodes: { ...c.statusCodes[k] },
      p50Ms: at(sorted, 0.5),
      p99Ms: at(sorted, 0.99),
      maxMs: at(sorted, 1),
    };
  };
  const late = c.late.sorted();
  return {
    durationS: (performance.now() - c.t0) / 1000,
    status: kind('status'),
    logs: kind('logs'),
    errors: c.errors,
    opened: c.opened,
    lateP99Ms: at(late, 0.99),
    lateMaxMs: at(late, 1),
    inFlight,
  };
}

const prepared = new Map<string, readonly AgentRequests[]>();

interface Running {
  readonly agents: readonly Agent[];
  readonly total: Counts;
  window: Counts;
  stopped: boolean;
  timer: NodeJS.Timeout | undefined;
}
let running: Running | undefined;

const inFlight = (r: Running): number => {
  let n = 0;
  for (const a of r.agents) for (const c of a.open) if (c.current !== undefined) n++;
  return n;
};

const count = (r: Running, f: (c: Counts) => void): void => {
  f(r.total);
  f(r.window);
};

/** A new keep-alive connection of agent `a`, busy until its first request is sent. */
function openConnection(r: Running, a: Agent, port: number): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    const conn: Connection = { socket, current: undefined };
    a.open.add(conn);
    socket.on(
      'data',
      responseReader((status) => answered(r, a, conn, status)),
    );
    socket.once('connect', () => resolve(conn));
    socket.on('error', (err) => {
      reject(err);
    });
    socket.once('close', () => {
      a.open.delete(conn);
      const i = a.idle.indexOf(conn);
      if (i >= 0) a.idle.splice(i, 1);
      if (conn.current !== undefined) {
        conn.current = undefined;
        count(r, (c) => {
          c.errors++;
        });
      }
    });
  });
}

function send(r: Running, a: Agent, kind: Kind, due: number, port: number): void {
  const write = (conn: Connection): void => {
    const sentAt = performance.now();
    conn.current = { kind, sentAt };
    count(r, (c) => {
      c.sent[kind]++;
      c.late.add(sentAt - due);
    });
    conn.socket.write(kind === 'status' ? a.requests.status : a.requests.logs);
  };
  const idle = a.idle.pop();
  if (idle !== undefined && !idle.socket.destroyed) {
    write(idle);
    return;
  }
  count(r, (c) => {
    c.opened++;
  });
  openConnection(r, a, port).then(write, () => {
    count(r, (c) => {
      c.errors++;
    });
  });
}

function answered(r: Running, a: Agent, conn: Connection, status: number): void {
  const current = conn.current;
  if (current === undefined) return;
  conn.current = undefined;
  const ms = performance.now() - current.sentAt;
  count(r, (c) => {
    c.latencies[current.kind].add(ms);
    c.statusCodes[current.kind][status] = (c.statusCodes[current.kind][status] ?? 0) + 1;
  });
  a.idle.push(conn);
}

async function start(arg: StartArg): Promise<{ connectMs: number }> {
  if (running) throw new Error('the fleet is already running: stop it first');
  const requests = prepared.get(arg.key);
  if (!requests) throw new Error(`no requests prepared for ${arg.key}`);
  const agents: Agent[] = requests.map((req) => ({ requests: req, idle: [], open: new Set() }));
  const r: Running = { agents, total: counts(), window: counts(), stopped: false, timer: undefined };
  running = r;
  const t0 = performance.now();
  for (let i = 0; i < agents.length; i += CONNECT_BATCH) {
    await Promise.all(
      agents.slice(i, i + CONNECT_BATCH).map(async (a) => {
        a.idle.push(await openConnection(r, a, arg.port));
      }),
    );
  }
  const connectMs = performance.now() - t0;

  // Each agent reports at its own phase of the period, and uploads at another: seeded, so the same
  // instants every run (OPAs started at random times).
  const periodMs = arg.periodS * 1000;
  const phases = rng(SEED);
  const schedule: { readonly atMs: number; readonly agent: Agent; readonly kind: Kind }[] = [];
  for (const agent of agents) {
    schedule.push({ atMs: phases() * periodMs, agent, kind: 'status' });
    const uploadAt = phases() * periodMs;
    if (arg.uploads) schedule.push({ atMs: uploadAt, agent, kind: 'logs' });
  }
  schedule.sort((a, b) => a.atMs - b.atMs);
  const begin = performance.now();
  let cycle = 0;
  let at = 0;
  const dueOf = (): number => begin + cycle * periodMs + (schedule[at] as (typeof schedule)[number]).atMs;
  const tick = (): void => {
    if (r.stopped || schedule.length === 0) return;
    const now = performance.now();
    while (dueOf() <= now) {
      const e = schedule[at] as (typeof schedule)[number];
      const due = dueOf();
      count(r, (c) => {
        c.due[e.kind]++;
      });
      send(r, e.agent, e.kind, due, arg.port);
      if (++at === schedule.length) {
        at = 0;
        cycle++;
      }
    }
    r.timer = setTimeout(tick, Math.max(0, dueOf() - performance.now()));
  };
  tick();
  return { connectMs };
}

async function stop(): Promise<FleetFigures> {
  const r = running;
  if (!r) throw new Error('the fleet is not running');
  r.stopped = true;
  clearTimeout(r.timer);
  // What is in flight is answered first (at most a few requests), so every request sent is counted.
  const deadline = performance.now() + 10_000;
  while (inFlight(r) > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const result = figures(r.total, inFlight(r));
  for (const a of r.agents) for (const c of a.open) c.socket.destroy();
  running = undefined;
  return result;
}

if (process.argv[1] === import.meta.filename) {
  serveCommands<AgentCommands>(
    {
      prepare(arg) {
        const built = fleetRequests({ ...arg, seed: SEED });
        prepared.set(arg.key, built.agents);
        return { statusBodyBytes: built.statusBodyBytes, logsBodyBytes: built.logsBodyBytes, logsJsonBytes: built.logsJsonBytes };
      },
      start,
      mark() {
        if (running) running.window = counts();
        return null;
      },
      collect() {
        if (!running) throw new Error('the fleet is not running');
        return figures(running.window, inFlight(running));
      },
      stop,
    },
    { pid: process.pid },
    async () => {
      if (running) await stop();
    },
  );
}
