// What a server child reports about itself: CPU time (all threads: JS, GC helpers, libuv pool) and
// memory, read in the server process so the load generator's own work is never counted.

export interface ServerStats {
  /** User + system CPU time of the whole process since it started, µs. */
  readonly cpuUs: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  /** Buffers and other memory outside the JS heap. */
  readonly externalBytes: number;
  /** Bundle requests held for `Prefer: wait` (the service only). */
  readonly heldLongPolls: number;
}

/** Milliseconds since the epoch with sub-millisecond precision, comparable across processes. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

export function processStats(heldLongPolls = 0): ServerStats {
  const cpu = process.cpuUsage();
  const mem = process.memoryUsage();
  return { cpuUs: cpu.user + cpu.system, rssBytes: mem.rss, heapUsedBytes: mem.heapUsed, externalBytes: mem.external, heldLongPolls };
}

/** Full collections until the heap stops shrinking (needs --expose-gc), so memory deltas are live data. */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('start the server with --expose-gc');
  let before = Infinity;
  for (let i = 0; i < 5 && process.memoryUsage().heapUsed < before; i++) {
    before = process.memoryUsage().heapUsed;
    gc();
  }
}

/** The commands every server child answers. */
export type ServerCommands = {
  stats: { arg: null; result: ServerStats };
  /** Collects garbage first, for memory figures. */
  gcStats: { arg: null; result: ServerStats };
  startProfile: { arg: null; result: null };
  /** Writes the profile to the file named. */
  stopProfile: { arg: string; result: null };
};
