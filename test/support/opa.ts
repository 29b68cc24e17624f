// Running a real OPA (OPA_BIN) for the tests of test/opa: its version, a free port, and `opa run
// --server` with a configuration file, keeping the tail of its output for failure messages.
import { execFileSync, spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import type { TestService } from './service.ts';

/** "0.61.0" → [0, 61, 0]; throws with OPA's output when OPA_BIN does not run. */
export function opaVersion(bin: string): [number, number, number] {
  let out: string;
  try {
    out = execFileSync(bin, ['version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`OPA_BIN=${bin} does not run (\`opa version\`): ${e.stderr || e.message}`);
  }
  const m = /Version:\s*v?(\d+)\.(\d+)\.(\d+)/.exec(out);
  if (!m) throw new Error(`cannot read the OPA version from: ${out}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface RunningOpa {
  readonly url: string;
  /** The tail of OPA's stdout and stderr. */
  output(): string;
  /** How it ended, once it has. */
  ended(): string | undefined;
  stop(): Promise<void>;
}

export const OUTPUT_LINES = 150;

/** Starts `opa run --server`; `onLine` sees every line of its output (output() keeps only the tail). */
export async function runOpa(bin: string, configFile: string, cwd: string, onLine?: (line: string) => void): Promise<RunningOpa> {
  const port = await freePort();
  const child = spawn(bin, ['run', '--server', '--addr', `127.0.0.1:${port}`, '--config-file', configFile, '--log-level', 'debug'], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const keeper = (): ((chunk: Buffer) => void) => {
    let partial = '';
    return (chunk) => {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop() ?? '';
      const whole = parts.filter((l) => l !== '');
      if (onLine) for (const l of whole) onLine(l);
      lines.push(...whole);
      if (lines.length > OUTPUT_LINES) lines.splice(0, lines.length - OUTPUT_LINES);
    };
  };
  child.stdout.on('data', keeper());
  child.stderr.on('data', keeper());
  let ended: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.on('error', (err) => {
      ended ??= `did not start: ${err.message}`;
      resolve();
    });
    child.on('exit', (code, signal) => {
      ended ??= `exited (code ${code}, signal ${signal})`;
      resolve();
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => lines.join('\n'),
    ended: () => ended,
    async stop() {
      if (ended === undefined) {
        ended = 'was stopped by the test';
        child.kill('SIGTERM');
      }
      const force = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(force);
    },
  };
}

/** GET (or POST `body` as JSON) to OPA's REST API; the parsed JSON answer. */
export async function opaJson(opa: RunningOpa, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(
    `${opa.url}${path}`,
    body === undefined ? {} : { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) },
  );
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/**
 * Polls `probe` until it returns a value; fails with OPA's output (and `more`, when given) if the
 * deadline passes or OPA ends. A deadline guards against a hang: nothing waits for a fixed time.
 */
export async function waitForOpa<T>(
  opa: RunningOpa,
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined> | T | undefined,
  more?: () => string,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    const ended = opa.ended();
    if (ended) throw new Error(`OPA ${ended} while we waited for ${what}\n${more?.() ?? ''}\nOPA at ${opa.url}:\n${opa.output()}`);
    try {
      const value = await probe();
      if (value !== undefined) return value;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (performance.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}\n${more?.() ?? ''}\nOPA at ${opa.url}:\n${opa.output()}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The tenant, connector and bundle the real-OPA tests serve: one Bundle of every Enforced rule of the tenant. */
export const SIDECARS = { tenant: 'acme', connector: 'sidecars', bundle: 'everything' } as const;

/** connectors.yaml for them: the Connector with `spec` (YAML flow text, e.g. `{ tokenRotation: 1 }`) and its Bundle. */
export function sidecarsManifest(spec: string): string {
  const { tenant, connector, bundle } = SIDECARS;
  return `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: ${connector}, namespace: ${tenant} }
spec: ${spec}
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: ${bundle}, namespace: ${tenant} }
spec: { connector: ${connector} }
`;
}

/** What one test of test/opa starts: its service, its OPAs and their folders. */
export interface OpaScope {
  service: TestService | undefined;
  readonly opas: RunningOpa[];
  readonly dirs: string[];
}

/** A scope whose OPAs, service and folders are stopped and removed after each test of the file. */
export function opaTestScope(): OpaScope {
  const scope: OpaScope = { service: undefined, opas: [], dirs: [] };
  afterEach(async () => {
    await Promise.all(scope.opas.splice(0).map((o) => o.stop()));
    await scope.service?.stop();
    scope.service = undefined;
    for (const d of scope.dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });
  return scope;
}
