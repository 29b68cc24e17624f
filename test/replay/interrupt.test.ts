// replay --opa interrupted (Ctrl-C, a cancelled CI job) while OPA decides: the temporary folder of
// bundle archives it wrote goes too, and the exit status says which signal ended it.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'src', 'cli.ts');
const tmp = mkdtempSync(join(tmpdir(), 'acl-replay-interrupt-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** An `opa` that prints its version, and whose eval reads its input and takes its time (a second). */
const SLOW_OPA = `#!${process.execPath}
if (process.argv[2] === 'version') { process.stdout.write('Version: 9.9.9-slow\\n'); process.exit(0); }
process.stdin.resume();
process.stdin.on('end', () => setTimeout(() => process.exit(3), 1000));
`;

const line = JSON.stringify({
  time: new Date().toISOString(),
  stream: 'decisions',
  tenant: 'acme',
  source: 'service',
  endpoint: 'authorization',
  decision: 'deny',
  policyId: 'acme',
  input: { principal: { type: 'user', id: 'u-red', team: 'red' }, action: 'read', resource: { type: 'document', id: 'd', team: 'blue' } },
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setImmediate(r));
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 25));
}

describe('replay --opa interrupted', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('on %s removes its temporary folder and exits %i', async (signal, status) => {
    const dir = join(tmp, signal);
    const temp = join(dir, 'tmp');
    mkdirSync(temp, { recursive: true });
    const opa = join(dir, 'opa');
    writeFileSync(opa, SLOW_OPA);
    chmodSync(opa, 0o755);
    const log = join(dir, 'decisions.log');
    writeFileSync(log, `${line}\n`);
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temp };
    delete env['OPA_BIN'];
    const child = spawn(process.execPath, [CLI, 'replay', '--manifests', 'examples', '--decisions', log, '--opa', opa], { cwd: ROOT, env });
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    const archives = () => readdirSync(temp).flatMap((d) => readdirSync(join(temp, d)));
    // The archives are written just before OPA is run: interrupt while it decides.
    await until(() => archives().length > 0);
    expect(archives().length).toBeGreaterThan(0);
    child.kill(signal);
    expect(await closed).toBe(status);
    expect(readdirSync(temp)).toEqual([]);
  });
});
