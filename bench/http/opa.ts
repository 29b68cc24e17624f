// OPA's own REST API as a variant (only when OPA_BIN is set): `opa run --server` on our bundle,
// pinned to the server core like every other variant, answering POST /v1/data/acl/allow.
import { execFileSync, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { track } from './ipc.ts';
import { processCpuUs } from './procfs.ts';

export interface OpaServer {
  readonly port: number;
  readonly pid: number;
  readonly version: string;
  /** User + system CPU of the OPA process so far, µs (from /proc, 10 ms resolution). */
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Starts OPA on `core` serving the bundle bytes, and waits until /health answers. */
export async function startOpa(bin: string, bundle: Uint8Array, core: number): Promise<OpaServer> {
  const version = /Version:\s*(\S+)/.exec(execFileSync(bin, ['version'], { encoding: 'utf8' }))?.[1] ?? 'unknown';
  const help = execFileSync(bin, ['run', '--help'], { encoding: 'utf8' });
  // The flag that stops the version check was renamed over OPA's history; use whichever this one has.
  const quiet = ['--disable-telemetry', '--skip-version-check'].filter((f) => help.includes(f)).slice(0, 1);
  const dir = await mkdtemp(join(tmpdir(), 'acl-bench-opa-'));
  const file = join(dir, 'bundle.tar.gz');
  await writeFile(file, bundle);
  const port = await freePort();
  const child = spawn(
    'taskset',
    ['-c', String(core), bin, 'run', '--server', '--addr', `127.0.0.1:${port}`, '--log-level', 'error', ...quiet, '--bundle', file],
    {
      // Go sizes its scheduler from the affinity mask already; saying it keeps that true everywhere.
      env: { ...process.env, GOMAXPROCS: '1' },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  track(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`opa exited with ${child.exitCode} before it was ready`);
    const ok = await fetch(`http://127.0.0.1:${port}/health?bundles`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill();
      throw new Error('opa did not become healthy within 30 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    port,
    pid: child.pid as number,
    version,
    cpuUs: () => processCpuUs(child.pid as number),
    async stop() {
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
