// One measured `node src/cli.ts serve` for bench/memory.ts: spawned with bench/memory/probe.ts
// loaded, waited for (ready, every expected bundle served, then quiet: its CPU time flat), measured
// after full collections over IPC, optionally heap-snapshotted and summed by kind, then stopped.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processCpuUs } from '../http/procfs.ts';
import { type HeapSummary, heapSummary, type Kind } from './heap.ts';
import type { Measured } from './probe.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const PROBE = join(import.meta.dirname, 'probe.ts');
const QUIET_WINDOW_MS = 2000;
/** CPU time per quiet window below which the service counts as idle (timers, the relist...). */
const QUIET_CPU_MS = 60;
const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface Run extends Measured {
  readonly label: string;
  readonly readyMs: number;
  readonly statusWrites: number;
  /** Self size by kind and by shape from heap snapshots of every thread, when asked for. */
  readonly heap: HeapSummary | undefined;
}

export interface RunOptions {
  readonly label: string;
  /** serve's arguments after the listeners (--manifests ..., or --kubeconfig ...). */
  readonly args: readonly string[];
  /** How many acl_bundle_revision series /metrics must show before measuring. */
  readonly bundles: number;
  readonly snapshot: boolean;
  readonly timeoutMs?: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const metric = (text: string, name: string): number =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Starts the service, waits until it is loaded and idle, measures it, and stops it. */
export async function measureService(o: RunOptions): Promise<Run> {
  const port = await freePort();
  const work = mkdtempSync(join(tmpdir(), 'acl-bench-memory-'));
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [
      '--expose-gc',
      '--import',
      PROBE,
      join(ROOT, 'src', 'cli.ts'),
      'serve',
      '--insecure-http',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      `127.0.0.1:${port}`,
      '--console-listen',
      '127.0.0.1:0',
      '--state-dir',
      join(work, 'state'),
      '--log-level',
      'warn',
      ...o.args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
  );
  live.add(child);
  let output = '';
  const keep = (d: Buffer): void => {
    output = (output + d.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let nextId = 0;
  const call = <T>(msg: Record<string, unknown>): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      const onMessage = (m: { id: number; reply: T }): void => {
        if (m.id !== id) return;
        child.off('message', onMessage);
        resolve(m.reply);
      };
      child.on('message', onMessage);
      child.send({ id, ...msg }, (err) => err && reject(err));
    });
  const get = async (path: string): Promise<{ status: number; text: string } | undefined> => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: res.status, text: await res.text() };
    } catch {
      return undefined;
    }
  };
  const deadline = t0 + (o.timeoutMs ?? 15 * 60_000);
  const check = (): void => {
    if (child.exitCode !== null) throw new Error(`${o.label}: the service exited (${child.exitCode}):\n${output}`);
    if (performance.now() > deadline) throw new Error(`${o.label}: not loaded in time:\n${output}`);
  };
  try {
    let readyMs = 0;
    for (;;) {
      check();
      if (!readyMs && (await get('/readyz'))?.status === 200) readyMs = performance.now() - t0;
      const text = readyMs ? ((await get('/metrics'))?.text ?? '') : '';
      if (readyMs && [...text.matchAll(/^acl_bundle_revision\{/gm)].length >= o.bundles) break;
      await sleep(100);
    }
    progress(`  ${o.label}: ready after ${(readyMs / 1000).toFixed(1)} s, bundles served; waiting for quiet`);
    // Quiet: CPU time flat, or (a Kubernetes source relisting its hundreds of watches never is) an
    // empty queue and no status written for two windows in a row.
    const busy = async (): Promise<string> => {
      const text = (await get('/metrics'))?.text ?? '';
      return `${metric(text, 'acl_queue_depth')}/${metric(text, 'acl_status_writes_total')}/${metric(text, 'acl_reconcile_total')}`;
    };
    for (let cpu = await processCpuUs(child.pid as number), done = await busy(), still = 0; ; ) {
      await sleep(QUIET_WINDOW_MS);
      check();
      const now = await processCpuUs(child.pid as number);
      const doing = await busy();
      still = doing === done && doing.startsWith('0/') ? still + 1 : 0;
      if (now - cpu < QUIET_CPU_MS * 1000 || still >= 2) break;
      cpu = now;
      done = doing;
    }
    const statusWrites = metric((await get('/metrics'))?.text ?? '', 'acl_status_writes_total');
    const measured = await call<Measured>({ cmd: 'measure' });
    const threads = measured.workers.map((w) => `${w.thread} ${(w.heapUsed / 2 ** 20).toFixed(1)} MB`).join(', ');
    progress(
      `  ${o.label}: RSS ${(measured.rss / 2 ** 20).toFixed(1)} MB, heap used ${(measured.heapUsed / 2 ** 20).toFixed(1)} MB; worker heaps: ${threads}`,
    );
    let heap: HeapSummary | undefined;
    if (o.snapshot) {
      // Every thread's heap, summed: the reading and packing threads hold objects too.
      const files = await call<string[]>({ cmd: 'snapshot', path: join(work, 'service.heapsnapshot') });
      const sum: HeapSummary = { kinds: new Map(), shapes: new Map() };
      const merge = (into: Map<string, Kind>, from: ReadonlyMap<string, Kind>): void => {
        for (const [key, k] of from) {
          const had = into.get(key);
          into.set(key, { bytes: k.bytes + (had?.bytes ?? 0), count: k.count + (had?.count ?? 0) });
        }
      };
      for (const file of files) {
        const one = heapSummary(file);
        merge(sum.kinds, one.kinds);
        merge(sum.shapes, one.shapes);
        rmSync(file, { force: true });
      }
      heap = sum;
    }
    return { label: o.label, readyMs, statusWrites, heap, ...measured };
  } finally {
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    await exited;
    clearTimeout(killer);
    live.delete(child);
    rmSync(work, { recursive: true, force: true });
  }
}
