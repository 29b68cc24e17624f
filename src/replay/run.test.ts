import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rng } from '../../test/support/corpus.ts';
import { buildOffline } from '../pipeline/index.ts';
import { decide } from '../policy/index.ts';
import { type World, worldOf } from '../policytest/index.ts';
import { replayLogs } from './run.ts';
import { CAUSES, type Cause, type ReplayReport } from './types.ts';

const EXAMPLES = join(import.meta.dirname, '..', '..', 'examples');
const MAX = 2048;
const WINDOW = { since: Date.parse('2026-11-24T00:00:00Z'), until: Date.parse('2026-11-25T00:00:00Z') };

let world: World;
let dir = '';
beforeAll(async () => {
  const offline = await buildOffline(EXAMPLES);
  if ('unreadable' in offline) throw new Error(offline.unreadable);
  world = worldOf(offline);
  dir = await mkdtemp(join(tmpdir(), 'replay-run-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

type Kind = 'good' | 'outside' | Cause;
const KINDS: readonly Kind[] = ['good', 'good', 'good', 'outside', ...CAUSES];

/** One log line of a kind, and (for a good one) the decision the examples really make, so replay finds it unchanged. */
function lineOf(kind: Kind, pick: () => number): string {
  const user = ['blue', 'red', 'green'][Math.floor(pick() * 3)] ?? 'blue';
  const input = {
    principal: { type: 'user', id: `u-${user}`, team: user, roles: pick() < 0.3 ? ['admin'] : [] },
    action: ['read', 'write', 'delete', 'share'][Math.floor(pick() * 4)] ?? 'read',
    resource: { type: 'document', id: 'doc-1', team: 'blue', owner: 'u-blue' },
    context: {},
    actionProperties: {},
  };
  const acme = world.get('acme');
  if (acme === undefined) throw new Error('examples lost tenant acme');
  const d = decide(acme.index, input, acme.directory);
  const hour = kind === 'outside' ? '2026-11-23T23' : '2026-11-24T10';
  const base = {
    time: `${hour}:00:00.000Z`,
    stream: 'decisions',
    tenant: 'acme',
    source: 'service',
    endpoint: 'evaluation',
    decision: d.allow ? 'allow' : 'deny',
    policyId: d.policyId,
    path: 'acl/allow',
    input,
  };
  const opa = { ...base, source: 'opa', bundle: 'gateway-documents', connector: 'gateways', endpoint: undefined };
  switch (kind) {
    case 'good':
      return JSON.stringify(pick() < 0.5 ? base : opa);
    case 'outside':
      return JSON.stringify(base);
    case 'not-json':
      return JSON.stringify(base).slice(0, 1 + Math.floor(pick() * 200));
    case 'not-ours':
      return JSON.stringify({ level: 30, time: base.time, msg: 'Reconciled' });
    case 'not-a-decision':
      return JSON.stringify({ ...opa, decision: 'undefined' });
    case 'refused-input':
      return JSON.stringify({ ...base, input: { ...input, action: '' } });
    case 'too-long':
      return JSON.stringify({ ...base, input: { ...input, context: { pad: 'x'.repeat(MAX) } } });
    case 'unknown-tenant':
      return JSON.stringify({ ...base, tenant: 'nobody' });
    case 'unknown-bundle':
      return JSON.stringify({ ...opa, bundle: 'gone' });
  }
}

/** Writes `lines` as a logrotate folder: files split at random, each plain or gzip (gzip ones of one or several members). */
async function writeRotated(folder: string, lines: readonly string[], pick: () => number): Promise<void> {
  await mkdir(folder);
  const files = 1 + Math.floor(pick() * 4);
  const cuts = [0, ...Array.from({ length: files - 1 }, () => Math.floor(pick() * lines.length)).sort((a, b) => a - b), lines.length];
  for (let i = 0; i < files; i++) {
    const text = lines.slice(cuts[i], cuts[i + 1]).map((l) => `${l}\n`);
    // Oldest first: the first part is the highest-numbered rotation, the last the live file.
    const age = files - 1 - i;
    if (age === 0 || pick() < 0.4) await writeFile(join(folder, age === 0 ? 'decisions.log' : `decisions.log.${age}`), text.join(''));
    else {
      const half = Math.floor(text.length * pick());
      const members = [gzipSync(text.slice(0, half).join('')), gzipSync(text.slice(half).join(''))];
      await writeFile(join(folder, `decisions.log.${age}.gz`), Buffer.concat(members));
    }
  }
}

async function replay(paths: string[], stdin: NodeJS.ReadableStream = Readable.from([])): Promise<ReplayReport> {
  const report = await replayLogs({
    paths,
    stdin,
    world,
    report: { manifests: 'examples', maxFlips: 0 },
    sinceMs: WINDOW.since,
    untilMs: WINDOW.until,
    maxLineBytes: MAX,
  });
  if (typeof report === 'string') throw new Error(report);
  return report;
}

function expectCounted(report: ReplayReport, kinds: readonly Kind[]): void {
  const sum = Object.values(report.unreplayable).reduce((a, b) => a + b, 0);
  expect(report.lines).toBe(kinds.length);
  expect(report.lines).toBe(report.totals.replayed + report.outsideWindow + sum);
  expect(report.totals.replayed).toBe(kinds.filter((k) => k === 'good').length);
  expect(report.totals.unchanged).toBe(report.totals.replayed);
  expect(report.outsideWindow).toBe(kinds.filter((k) => k === 'outside').length);
  for (const cause of CAUSES) expect(report.unreplayable[cause], cause).toBe(kinds.filter((k) => k === cause).length);
}

describe('replayLogs', () => {
  it('counts every line once: lines = replayed + outside the window + each cause, over random mixes, plain, gzip and rotated folders', async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const pick = rng(seed);
      const kinds = Array.from({ length: 50 + Math.floor(pick() * 300) }, () => KINDS[Math.floor(pick() * KINDS.length)] ?? 'good');
      const lines = kinds.map((k) => lineOf(k, pick));
      const plain = join(dir, `plain-${seed}.log`);
      await writeFile(plain, `${lines.join('\n')}\n`);
      expectCounted(await replay([plain]), kinds);
      const gz = join(dir, `gz-${seed}.log.gz`);
      await writeFile(gz, gzipSync(lines.join('\n')));
      expectCounted(await replay([gz]), kinds);
      const folder = join(dir, `rotated-${seed}`);
      await writeRotated(folder, lines, pick);
      const report = await replay([folder]);
      expectCounted(report, kinds);
      expect(report.sources.at(-1)).toBe(join(folder, 'decisions.log'));
      // Several paths, stdin among them: the counts add up.
      const twice = await replay([plain, '-'], Readable.from([gzipSync(lines.join('\n'))]));
      expectCounted(twice, [...kinds, ...kinds]);
      expect(twice.sources).toEqual([plain, '-']);
    }
  });

  it('counts a gzip stream cut short: its whole lines as they are, the torn one as not-json', async () => {
    const pick = rng(99);
    const kinds = Array.from({ length: 400 }, (): Kind => 'good');
    const lines = kinds.map((k) => lineOf(k, pick));
    const whole = gzipSync(lines.join('\n'));
    const f = join(dir, 'cut.gz');
    await writeFile(f, whole.subarray(0, Math.floor(whole.length / 2)));
    const report = await replay([f]);
    const sum = Object.values(report.unreplayable).reduce((a, b) => a + b, 0);
    expect(report.lines).toBe(report.totals.replayed + sum);
    expect(report.totals.replayed).toBeGreaterThan(10);
    expect(report.unreplayable['not-json']).toBeLessThanOrEqual(1);
  });
});
