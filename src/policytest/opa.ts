// A real OPA deciding the cases on the bundles their tenant would serve: one `opa eval` per bundle for
// all of its cases (the inputs as one JSON array on stdin), on the very archive `serve` would serve.
// OPA 1.x reads our Rego v0 bundles as v0 because their .manifest says `rego_version: 0`, and OPA
// 0.59+ reads the v1 ones through their `import rego.v1`; the query is valid in both Rego versions.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { entityTypesTake } from '../bundle/index.ts';
import type { DecisionInput } from '../policy/index.ts';
import type { ResolvedCase } from './cases.ts';
import type { OpaDecision } from './run.ts';
import type { TenantWorld, World, WorldBundle } from './world.ts';

export interface Opa {
  readonly binary: string;
  /** As `opa version` prints it, e.g. "1.1.0". */
  readonly version: string;
}

const QUERY = '[allowed | some i; doc := input[i]; allowed := data.acl.allow with input as doc]';
/** Bundles evaluated at the same time (each is one OPA process). */
const PARALLEL = 2;

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

/** Whether a bundle's entityTypes filter lets its rules decide the case: no filter, or it names the principal's or resource's type. */
function admits(bundle: WorldBundle, input: DecisionInput): boolean {
  const typeOf = (v: unknown): string => (typeof v === 'string' ? v : '');
  return entityTypesTake(new Set(bundle.entityTypes), typeOf(input.principal['type']), typeOf(input.resource['type']));
}

/** The bundles OPA decides a case on: those it names, else every bundle of its tenant that admits it. */
export function bundlesFor(c: ResolvedCase, tenant: TenantWorld): WorldBundle[] {
  if (c.bundles !== undefined) return c.bundles.flatMap((b) => tenant.bundles.get(b) ?? []);
  return [...tenant.bundles.values()].filter((b) => admits(b, c.input));
}

/** OPA's data.acl.allow for each input, on one bundle archive; a string says why there is none. */
async function opaAllows(opa: Opa, archive: string, inputs: readonly DecisionInput[], label: string): Promise<boolean[] | string> {
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
 * playground), or why OPA could not decide: the same `opa eval` as the test runner's.
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

/** OPA's decisions for every case (in order; [] for a case no bundle admits), or why OPA could not decide them. */
export async function decideWithOpa(opa: Opa, cases: readonly ResolvedCase[], world: World): Promise<OpaDecision[][] | string> {
  const decisions: OpaDecision[][] = cases.map(() => []);
  const work = new Map<WorldBundle, number[]>();
  cases.forEach((c, i) => {
    const tenant = world.get(c.tenant);
    for (const b of tenant ? bundlesFor(c, tenant) : []) {
      const list = work.get(b) ?? [];
      list.push(i);
      work.set(b, list);
    }
  });
  const dir = await mkdtemp(join(tmpdir(), 'acl-test-opa-'));
  try {
    const queue = [...work.entries()];
    let failed: string | undefined;
    const worker = async (): Promise<void> => {
      for (let next = queue.shift(); next !== undefined && failed === undefined; next = queue.shift()) {
        const [bundle, indexes] = next;
        const label = `${bundle.tenant}/${bundle.name}`;
        const archive = join(dir, `${encodeURIComponent(bundle.tenant)}.${encodeURIComponent(bundle.name)}.tar.gz`);
        await writeFile(archive, bundle.bytes);
        const allows = await opaAllows(
          opa,
          archive,
          indexes.map((i) => (cases[i] as ResolvedCase).input),
          label,
        );
        if (typeof allows === 'string') failed ??= allows;
        else for (const [k, i] of indexes.entries()) decisions[i]?.push({ bundle: label, decision: allows[k] ? 'allow' : 'deny' });
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    if (failed !== undefined) return failed;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  // Bundles were run in parallel: each case lists its bundles in name order.
  for (const d of decisions) d.sort((a, b) => (a.bundle < b.bundle ? -1 : a.bundle > b.bundle ? 1 : 0));
  return decisions;
}
