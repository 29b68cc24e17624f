// The load generator: `connections` keep-alive sockets, one request in flight each, prebuilt request
// bytes and a minimal response reader. On the machine of docs/benchmarks.md it drives the raw
// node:http baseline to a full server core (about 60,000 req/s) using half of its own core, where
// autocannon reached 48,000 req/s with its own core 80% busy and the server's 17% idle: a baseline
// limited by its load generator flatters every ratio taken against it.
// (BENCH_LOADGEN=autocannon still measures saturation with autocannon.)
//   saturate: each connection sends its next request as soon as the last is answered;
//   paced: requests fall due at an even rate; one due while every connection is busy waits for the
//     first free one, and latency runs from when it was due, so a server that falls behind is
//     charged for the wait (no coordinated omission). autocannon's rate limit is not used for this:
//     it sends each connection's quota back to back at the start of every second.
import { connect, type Socket } from 'node:net';
import { latencyRecorder, percentile, type LoadResult, type LoadSpec } from './load.ts';
import { requestBytes, responseReader } from './responses.ts';

interface Connection {
  readonly socket: Socket;
  sentAt: number;
}

/** Where responses go; swapped between warm-up and measurement. */
interface Handler {
  response(c: Connection, status: number): void;
  error(): void;
}

interface Open {
  readonly connections: readonly Connection[];
  readonly handler: Handler;
  /** Writes the next request of the list on `c`; its latency runs from `from`. */
  send(c: Connection, from: number): void;
}

/** Opens the connections and has one request answered on each before anything is measured. */
async function open(spec: LoadSpec): Promise<Open> {
  const requests = spec.requests.map((r) => requestBytes(r.method, r.path, r.headers, r.body));
  let next = 0;
  const handler: Handler = { response: () => {}, error: () => {} };
  const connections = await Promise.all(
    Array.from(
      { length: spec.connections },
      () =>
        new Promise<Connection>((resolve, reject) => {
          const socket = connect(spec.port, '127.0.0.1');
          socket.setNoDelay(true);
          const c: Connection = { socket, sentAt: 0 };
          socket.on(
            'data',
            responseReader((status) => handler.response(c, status)),
          );
          socket.once('connect', () => resolve(c));
          socket.once('error', (err) => {
            reject(err);
            handler.error();
          });
        }),
    ),
  );
  const send = (c: Connection, from: number): void => {
    c.sentAt = from;
    c.socket.write(requests[next++ % requests.length] as Buffer);
  };
  await new Promise<void>((resolve) => {
    let warmed = 0;
    handler.response = () => {
      if (++warmed === connections.length) resolve();
    };
    for (const c of connections) send(c, 0);
  });
  return { connections, handler, send };
}

/** Latencies and status codes of the measured window, and the CPU this process spent on it. */
function recorder(): {
  add(c: Connection, status: number): void;
  error(): void;
  errors(): number;
  count(): number;
  finish(late: number): LoadResult;
} {
  const latencies = latencyRecorder();
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  return {
    add(c, status) {
      latencies.add(performance.now() - c.sentAt);
      statusCodes[status] = (statusCodes[status] ?? 0) + 1;
    },
    error() {
      errors++;
    },
    errors: () => errors,
    count: () => latencies.count(),
    finish(late) {
      const wallS = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const sorted = latencies.sorted();
      return {
        responses: sorted.length,
        durationS: wallS,
        rps: sorted.length / wallS,
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
        maxMs: sorted.length > 0 ? (sorted[sorted.length - 1] as number) : NaN,
        statusCodes,
        errors,
        loadgenCpu: (cpu.user + cpu.system) / 1e6 / wallS,
        late,
      };
    },
  };
}

/** Closed loop for `durationS`: what the server sustains at this concurrency. */
export async function saturate(spec: LoadSpec): Promise<LoadResult> {
  const { connections, handler, send } = await open(spec);
  const rec = recorder();
  let stopping = false;
  let outstanding = connections.length;
  const drained = new Promise<void>((resolve) => {
    const settle = (): void => {
      if (--outstanding === 0) resolve();
    };
    handler.response = (c, status) => {
      rec.add(c, status);
      if (stopping) settle();
      else send(c, performance.now());
    };
    handler.error = () => {
      rec.error();
      settle();
    };
  });
  for (const c of connections) send(c, performance.now());
  await new Promise((resolve) => setTimeout(resolve, spec.durationS * 1000));
  stopping = true;
  await drained;
  const result = rec.finish(0);
  for (const c of connections) c.socket.destroy();
  return result;
}

/** `rate` requests per second for `durationS`. */
export async function paced(spec: LoadSpec & { readonly rate: number }): Promise<LoadResult> {
  const { connections, handler, send } = await open(spec);
  const idle = [...connections];
  const waiting: number[] = []; // due times of requests that found every connection busy
  const total = Math.round(spec.rate * spec.durationS);
  const intervalMs = 1000 / spec.rate;
  let late = 0;
  const rec = recorder();
  const start = performance.now();
  await new Promise<void>((resolve) => {
    const free = (c: Connection): void => {
      const due = waiting.shift();
      if (due === undefined) idle.push(c);
      else send(c, due);
    };
    const settle = (): void => {
      if (rec.count() + rec.errors() >= total) resolve();
    };
    handler.response = (c, status) => {
      rec.add(c, status);
      free(c);
      settle();
    };
    handler.error = () => {
      rec.error();
      settle();
    };
    let scheduled = 0;
    // A setImmediate loop (not a 1 ms timer) keeps the schedule to tens of microseconds; the load
    // generator has its own core, so spinning costs the server nothing.
    const tick = (): void => {
      const now = performance.now();
      while (scheduled < total && start + scheduled * intervalMs <= now) {
        const due = start + scheduled * intervalMs;
        scheduled++;
        const c = idle.pop();
        if (c) send(c, due);
        else {
          late++;
          waiting.push(due);
        }
      }
      if (scheduled < total) setImmediate(tick);
    };
    tick();
  });
  const result = rec.finish(late);
  for (const c of connections) c.socket.destroy();
  return result;
}
