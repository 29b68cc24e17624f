import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseLosslessJson, type RecentDecision } from '../fleet/index.ts';
import { openStateFolder } from './state.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'acl-state-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const decision = (input: unknown): RecentDecision => ({
  time: '2026-11-24T10:00:00Z',
  agent: 'opa-1',
  decisionId: 'd-1',
  revision: '1',
  path: 'acl/allow',
  decision: 'allow',
  result: true,
  input,
});

describe('recent decisions in the state folder', () => {
  it('come back after a restart with every number as it was written', async () => {
    const exact = parseLosslessJson('{"n":12345678901234567890,"f":0.10000000000000001}');
    await openStateFolder(dir).writeDecisions('acme', 'docs', [decision(exact)]);
    const [restored] = await openStateFolder(dir).decisions();
    expect(restored?.bundle).toBe('docs');
    expect(JSON.stringify(restored?.decisions[0]?.input)).toBe('{"n":12345678901234567890,"f":0.10000000000000001}');
  });

  it('skip a file that cannot be read, saying which, and still read the others', async () => {
    const state = openStateFolder(dir);
    await state.writeDecisions('acme', 'docs', [decision({ a: 1 })]);
    await state.writeDecisions('acme', 'broken', [decision({ a: 2 })]);
    await writeFile(join(dir, 'decisions', 'acme', 'broken.json'), '{"namespace":"acme","bundle":"bro');
    const unreadable: string[] = [];
    const restored = await openStateFolder(dir).decisions((file) => unreadable.push(file));
    expect(restored.map((d) => d.bundle)).toEqual(['docs']);
    expect(unreadable).toEqual([join(dir, 'decisions', 'acme', 'broken.json')]);
  });
});

describe("the console's admin key in the state folder", () => {
  it('is made once, mode 0600, and a key the person wrote there is kept and read at every call', async () => {
    const state = openStateFolder(dir);
    const path = await state.ensureConsoleAdminKey(() => 'first-key-0123456789');
    expect(path).toBe(join(dir, 'console-admin-key'));
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await state.ensureConsoleAdminKey(() => 'second-key-0123456789')).toBe(path);
    expect(await state.consoleAdminKey()).toBe('first-key-0123456789');
    await writeFile(path, 'a-key-of-my-own-0123456789\n');
    expect(await state.consoleAdminKey()).toBe('a-key-of-my-own-0123456789');
  });
});

describe('temporary files of the state folder', () => {
  it('are removed when no process will finish their write, and kept while one may', async () => {
    const { spawnSync } = await import('node:child_process');
    const { mkdir, readdir } = await import('node:fs/promises');
    // A pid that ran and ended: its temporary files are orphans.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    await mkdir(join(dir, 'objects', 'acme', 'rule'), { recursive: true });
    await mkdir(join(dir, 'tokens', 'acme'), { recursive: true });
    await writeFile(join(dir, 'objects', 'acme', 'rule', 'a.yaml'), 'kind: Rule\n');
    await writeFile(join(dir, 'objects', 'acme', 'rule', `a.yaml.${dead}.tmp`), '');
    // This pid in an earlier life (a container's pids repeat): nothing of ours is in flight at start.
    await writeFile(join(dir, 'tokens', 'acme', `gateways.${process.pid}.tmp`), 'agent_half');
    // pid 1 always runs: another process's write in progress is left alone.
    await writeFile(join(dir, 'problems.yaml.1.tmp'), '');
    await writeFile(join(dir, 'notes.tmp'), 'not ours');
    const state = openStateFolder(dir);
    expect(await state.removeStaleTemporaryFiles()).toEqual([
      `objects/acme/rule/a.yaml.${dead}.tmp`,
      `tokens/acme/gateways.${process.pid}.tmp`,
    ]);
    expect((await readdir(dir, { recursive: true })).sort()).toEqual([
      'notes.tmp',
      'objects',
      'objects/acme',
      'objects/acme/rule',
      'objects/acme/rule/a.yaml',
      'problems.yaml.1.tmp',
      'tokens',
      'tokens/acme',
    ]);
  });
});
