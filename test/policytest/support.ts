// What the tests of `acl-operator test` share: the CLI as a user runs it, and an offline build of a
// folder to run test files against in-process.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { runSuite, type SuiteOutcome } from '../../src/policytest/index.ts';
import { buildOffline, type Offline } from '../../src/pipeline/index.ts';

export const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'src', 'cli.ts');

export interface CliRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `acl-operator <args>` from the repository root; OPA_BIN is unset unless `env` sets it. */
export function cli(args: readonly string[], env: Record<string, string> = {}): CliRun {
  const { OPA_BIN: _unset, ...base } = process.env;
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', env: { ...base, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The offline build of a folder, as `acl-operator test` makes it. */
export async function offlineOf(dir: string): Promise<Offline> {
  const built = await buildOffline(dir);
  if ('unreadable' in built) throw new Error(built.unreadable);
  return built;
}

/** One test file's text run against an offline build, in-process. */
export function runText(offline: Offline, text: string, file = 'cases.test.yaml'): Promise<SuiteOutcome> {
  return runSuite(offline, [{ file, text }], { manifests: 'examples' });
}

/** Lines that would be a stack trace in a command's output. */
export function stackLines(text: string): string[] {
  return text.split('\n').filter((l) => /^\s+at .+[:(]/.test(l));
}
