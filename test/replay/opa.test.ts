// replay --opa without a real OPA: a fake `opa` that logs how many inputs each `opa eval` got and
// answers as FAKE_OPA says shows the batching (bounded, every decision sent once per bundle), the
// disagreements and their first examples in log order, a failing OPA as a message, and the temporary
// folder removed either way. test/opa/replay-decide.test.ts runs a real OPA (OPA_BIN).
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Opa } from '../../src/opa/index.ts';
import type { World } from '../../src/policytest/index.ts';
import { createOpaReplay } from '../../src/replay/opa.ts';
import { createReplayer } from '../../src/replay/replay.ts';
import type { OpaReplay, Replayed } from '../../src/replay/types.ts';
import { candidateWorld, recorded } from './world.ts';

/** eval: appends the number of inputs to $FAKE_LOG (and the length of its stdin to $FAKE_LOG.chars); answers allow for all (allow), or fails (fails). */
const FAKE = `#!${process.execPath}
const fs = require('node:fs');
let text = '';
process.stdin.on('data', (c) => { text += c; });
process.stdin.on('end', () => {
  if (process.env.FAKE_OPA === 'fails') { process.stderr.write('error: bundle is broken\\n'); process.exit(3); }
  const inputs = JSON.parse(text);
  fs.appendFileSync(process.env.FAKE_LOG, inputs.length + '\\n');
  fs.appendFileSync(process.env.FAKE_LOG + '.chars', text.length + '\\n');
  process.stdout.write(JSON.stringify({ result: [{ expressions: [{ value: inputs.map(() => true) }] }] }));
});
`;

let tmp = '';
let world: World;
let opa: Opa;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'acl-replay-fake-opa-'));
  await writeFile(join(tmp, 'opa'), FAKE);
  await chmod(join(tmp, 'opa'), 0o755);
  opa = { binary: join(tmp, 'opa'), version: '9.9.9-fake' };
  world = await candidateWorld();
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const red = { type: 'user', id: 'u-red', team: 'red' };

/** n service lines the candidate denies (red reading blue documents): both acme bundles admit them. */
function denied(n: number): Replayed[] {
  const replay = createReplayer(world);
  return Array.from({ length: n }, (_, i) => {
    const r = replay(
      recorded({
        where: `l:${i + 1}`,
        decision: 'deny',
        principal: red,
        action: 'read',
        resource: { type: 'document', id: `d-${i}`, team: 'blue' },
      }),
    );
    if ('ok' in r) throw new Error(r.detail);
    return r;
  });
}

async function replayAll(rs: readonly Replayed[], mode: string, log: string, parent: string): Promise<OpaReplay | string> {
  process.env['FAKE_OPA'] = mode;
  process.env['FAKE_LOG'] = log;
  const o = createOpaReplay(opa, world, parent);
  for (const r of rs) await o.add(r);
  return o.finish();
}

describe('createOpaReplay', () => {
  it('sends every decision once to each bundle that admits it, in batches of at most 1,000, and removes its folder', async () => {
    const parent = await mkdtemp(join(tmp, 'run-'));
    const log = join(tmp, 'batches.log');
    const result = await replayAll(denied(2_500), 'allow', log, parent);
    if (typeof result === 'string') throw new Error(result);
    const batches = (await readFile(log, 'utf8')).trim().split('\n').map(Number);
    expect(Math.max(...batches)).toBeLessThanOrEqual(1_000);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(5_000);
    expect(result).toMatchObject({
      version: '9.9.9-fake',
      decided: 5_000,
      counts: { replayed: 5_000, unchanged: 0, allowToDeny: 0, denyToAllow: 5_000 },
    });
    expect(await readdir(parent)).toEqual([]);
  });

  it('keeps each batch within 16 MiB of JSON when inputs are large (the service takes 1 MiB bodies), every decision still sent', async () => {
    const parent = await mkdtemp(join(tmp, 'run-'));
    const log = join(tmp, 'large.log');
    const pad = 'x'.repeat(600 * 1024);
    const replay = createReplayer(world);
    const large = Array.from({ length: 120 }, (_, i) => {
      const r = replay(
        recorded({ decision: 'deny', principal: red, action: 'read', resource: { type: 'document', id: `d-${i}`, team: 'blue', pad } }),
      );
      if ('ok' in r) throw new Error(r.detail);
      return r;
    });
    const result = await replayAll(large, 'allow', log, parent);
    if (typeof result === 'string') throw new Error(result);
    const chars = (await readFile(`${log}.chars`, 'utf8')).trim().split('\n').map(Number);
    expect(Math.max(...chars)).toBeLessThanOrEqual(16 * 1024 * 1024);
    expect(result).toMatchObject({ decided: 240, counts: { replayed: 240, denyToAllow: 240 } });
    expect(await readdir(parent)).toEqual([]);
  });

  it('counts every decision OPA makes otherwise as a disagreement, with the first ones in log order as examples', async () => {
    const parent = await mkdtemp(join(tmp, 'run-'));
    const result = await replayAll(denied(1_200), 'allow', join(tmp, 'd.log'), parent);
    if (typeof result === 'string') throw new Error(result);
    expect(result.disagreements).toBe(2_400);
    expect(result.disagreementExamples.map((e) => [e.where, e.opa, e.native])).toEqual([
      ['l:1', 'allow', 'deny'],
      ['l:1', 'allow', 'deny'],
      ['l:2', 'allow', 'deny'],
    ]);
  });

  it('says why when OPA fails, and still removes its folder', async () => {
    const parent = await mkdtemp(join(tmp, 'run-'));
    const result = await replayAll(denied(10), 'fails', join(tmp, 'f.log'), parent);
    expect(result).toMatch(/^OPA 9\.9\.9-fake failed on bundle acme\/(all|documents) \(exit 3\): error: bundle is broken/);
    expect(await readdir(parent)).toEqual([]);
  });

  it('decides nothing, and makes no folder, when no bundle admits a decision', async () => {
    const parent = await mkdtemp(join(tmp, 'run-'));
    const replay = createReplayer(world);
    const r = replay(recorded({ tenant: 'beta', decision: 'allow', principal: red, action: 'read', resource: { type: 'page', id: 'p' } }));
    if ('ok' in r) throw new Error(r.detail);
    const o = createOpaReplay(opa, world, parent);
    await o.add(r);
    expect(await o.finish()).toMatchObject({ decided: 0, disagreements: 0 });
    expect(await readdir(parent)).toEqual([]);
  });
});
