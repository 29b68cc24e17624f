// A real OPA, run as a program: `opa version` to know it, `opa eval` to decide inputs on a bundle
// archive (one process per bundle, the inputs as one JSON array on stdin), exactly as `serve` would
// serve the archive. `acl-operator test` (--opa) and the console's playground use it.
// OPA 1.x reads our Rego v0 bundles as v0 because their .manifest says `rego_version: 0`, and OPA
// 0.59+ reads the v1 ones through their `import rego.v1`; the query is valid in both Rego versions.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DecisionInput } from '../policy/index.ts';

export interface Opa {
  readonly binary: string;
  /** As `opa version` prints it, e.g. "1.1.0". */
  readonly version: string;
}

const QUERY = '[allowed | some i; doc := input[i]; allowed := data.acl.allow with input as doc]';

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly error?: string;
}

/** Longest one `opa` run may take: a hung OPA must not hang a test run or the console's playground. */
const RUN_TIMEOUT_MS = 120_000;

function run(binary: string, args: readonly string[], stdin?: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let timedOut = false;
    // unref: a timer must never keep a finished command alive (spawn's own timeout option does, when the spawn fails).
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, RUN_TIMEOUT_MS).unref();
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: null, stdout: '', stderr: '', error: e.message });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (timedOut) resolve({ code, stdout, stderr, error: `did not finish within ${RUN_TIMEOUT_MS / 1000} s and was stopped` });
      else resolve({ code, stdout, stderr });
    });
    // An OPA that exits before reading its input closes the pipe; what it printed says why.
    child.stdin.on('error', () => {});
    child.stdin.end(stdin ?? '');
  });
}

function firstLines(text: string): string {
  return text.trim().split('\n').slice(0, 5).join('\n');
}

/** The OPA at `binary` and its version, or why it cannot be used. */
export async function openOpa(binary: string): Promise<Opa | string> {
  const r = await run(binary, ['version']);
  if (r.error !== undefined) return `--opa ${binary}: cannot run it: ${r.error}`;
  if (r.code !== 0) return `--opa ${binary}: \`${binary} version\` failed (exit ${r.code}): ${firstLines(r.stderr || r.stdout)}`;
  const version = /^Version:\s*v?(\S+)/m.exec(r.stdout)?.[1];
  if (version === undefined) return `--opa ${binary}: \`${binary} version\` does not print an OPA version: ${firstLines(r.stdout)}`;
  return { binary, version };
}

/** OPA's data.acl.allow for each input, on one bundle archive (a file); a string says why there is none. */
export async function opaAllows(opa: Opa, archive: string, inputs: readonly DecisionInput[], label: string): Promise<boolean[] | string> {
  const r = await run(opa.binary, ['eval', '--format', 'json', '--bundle', archive, '--stdin-input', QUERY], JSON.stringify(inputs));
  if (r.error !== undefined || r.code !== 0) {
    return `OPA ${opa.version} failed on bundle ${label} (exit ${r.code ?? r.error}): ${firstLines(r.stderr || r.stdout)}`;
  }
  let value: unknown;
  try {
    const out = JSON.parse(r.stdout) as { result?: { expressions?: { value?: unknown }[] }[] };
    value = out.result?.[0]?.expressions?.[0]?.value;
  } catch {
    value = undefined;
  }
  if (!Array.isArray(value) || value.length !== inputs.length || !value.every((v) => typeof v === 'boolean')) {
    return `OPA ${opa.version} answered on bundle ${label} with something other than ${inputs.length} decisions: ${firstLines(r.stdout).slice(0, 300)}`;
  }
  return value;
}

/**
 * OPA's data.acl.allow for each input on one bundle, given as the bytes served (the console's
 * playground), or why OPA could not decide: the same `opa eval` as `acl-operator test`'s.
 */
export async function opaAllowsOnBundle(
  opa: Opa,
  bytes: Uint8Array,
  inputs: readonly DecisionInput[],
  label: string,
): Promise<boolean[] | string> {
  const dir = await mkdtemp(join(tmpdir(), 'acl-opa-'));
  try {
    const archive = join(dir, 'bundle.tar.gz');
    await writeFile(archive, bytes);
    return await opaAllows(opa, archive, inputs, label);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
