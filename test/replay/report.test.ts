// The replay report counted as lines stream by: exact counts per tenant and bundle, flips grouped by
// what they share with the first examples in log order, causes with their first lines, the gate, a
// stable order, and memory bounded by groups however hostile the log.
import { beforeAll, describe, expect, it } from 'vitest';
import type { World } from '../../src/policytest/index.ts';
import { createReplayer } from '../../src/replay/replay.ts';
import { createReportBuilder, type ReportOptions } from '../../src/replay/report.ts';
import {
  EXAMPLES_PER_GROUP,
  MAX_EXAMPLE_BYTES,
  MAX_GROUPS,
  type Recorded,
  type Replayed,
  type ReplayReport,
} from '../../src/replay/types.ts';
import { candidateWorld, recorded } from './world.ts';

let world: World;
beforeAll(async () => {
  world = await candidateWorld();
});

const OPTIONS: ReportOptions = { manifests: 'candidate', sources: ['decisions.log'], maxFlips: 0 };
const red = { type: 'user', id: 'u-red', team: 'red' };
const admin = { type: 'user', id: 'u-admin', team: 'blue', roles: ['admin'] };
const redDoc = { type: 'document', id: 'd-red', team: 'red' };
const blueDoc = { type: 'document', id: 'd-blue', team: 'blue' };
const report = { type: 'report', id: 'r-1' };
const finance = { type: 'user', id: 'u-f', team: 'finance' };

/** Every record replayed (or counted by cause) into a fresh builder, as the CLI feeds it. */
function run(records: readonly Recorded[], options: Partial<ReportOptions> = {}): ReplayReport {
  const builder = createReportBuilder({ ...OPTIONS, ...options });
  const replay = createReplayer(world);
  for (const rec of records) {
    builder.line();
    const r = replay(rec);
    if ('ok' in r) builder.unreplayable(r);
    else builder.replayed(r);
  }
  return builder.build();
}

/** The hand-counted mix: 2 unchanged, 3 allow → deny of one group, 1 deny → allow, an OPA flip, 2 causes. */
function mix(): Recorded[] {
  return [
    recorded({ where: 'l:1', decision: 'allow', rule: 'team-documents', principal: red, action: 'read', resource: redDoc }),
    recorded({ where: 'l:2', decision: 'allow', rule: 'team-documents', principal: red, action: 'read', resource: blueDoc }),
    recorded({ where: 'l:3', decision: 'deny', principal: admin, action: 'delete', resource: redDoc }),
    recorded({
      where: 'l:4',
      decision: 'allow',
      rule: 'team-documents',
      principal: red,
      action: 'read',
      resource: { ...blueDoc, id: 'd-2' },
    }),
    recorded({ where: 'l:5', source: 'opa', bundle: 'all', decision: 'deny', principal: finance, action: 'read', resource: report }),
    recorded({ where: 'l:6', source: 'opa', bundle: 'documents', decision: 'deny', principal: finance, action: 'read', resource: report }),
    recorded({ where: 'l:7', tenant: 'gone', decision: 'deny', principal: red, action: 'read', resource: redDoc }),
    recorded({
      where: 'l:8',
      decision: 'allow',
      rule: 'team-documents',
      principal: red,
      action: 'read',
      resource: { ...blueDoc, id: 'd-3' },
    }),
    recorded({
      where: 'l:9',
      decision: 'allow',
      rule: 'team-documents',
      principal: red,
      action: 'read',
      resource: { ...blueDoc, id: 'd-4' },
    }),
    recorded({ where: 'l:10', source: 'opa', bundle: 'retired', decision: 'deny', principal: red, action: 'read', resource: redDoc }),
  ];
}

describe('createReportBuilder', () => {
  it('counts a hand-built mix exactly: totals, targets, groups and causes', () => {
    const r = run(mix());
    expect(r.lines).toBe(10);
    expect(r.totals).toEqual({ replayed: 8, unchanged: 2, allowToDeny: 4, denyToAllow: 2 });
    expect(r.targets).toEqual([
      { tenant: 'acme', bundle: null, counts: { replayed: 6, unchanged: 1, allowToDeny: 4, denyToAllow: 1 } },
      { tenant: 'acme', bundle: 'all', counts: { replayed: 1, unchanged: 0, allowToDeny: 0, denyToAllow: 1 } },
      { tenant: 'acme', bundle: 'documents', counts: { replayed: 1, unchanged: 1, allowToDeny: 0, denyToAllow: 0 } },
    ]);
    expect(r.groups.map(({ examples, ...g }) => ({ ...g, examples: examples.map((e) => e.where) }))).toEqual([
      {
        tenant: 'acme',
        bundle: null,
        change: 'allow-to-deny',
        subjectType: 'user',
        action: 'read',
        resourceType: 'document',
        ruleBefore: 'team-documents',
        ruleAfter: null,
        count: 4,
        examples: ['l:2', 'l:4', 'l:8'],
      },
      {
        tenant: 'acme',
        bundle: null,
        change: 'deny-to-allow',
        subjectType: 'user',
        action: 'delete',
        resourceType: 'document',
        ruleBefore: null,
        ruleAfter: 'admins',
        count: 1,
        examples: ['l:3'],
      },
      {
        tenant: 'acme',
        bundle: 'all',
        change: 'deny-to-allow',
        subjectType: 'user',
        action: 'read',
        resourceType: 'report',
        ruleBefore: null,
        ruleAfter: 'finance-reports',
        count: 1,
        examples: ['l:5'],
      },
    ]);
    expect(r.groups[0]?.examples).toHaveLength(EXAMPLES_PER_GROUP);
    expect(r.groups[0]?.examples[0]?.input).toEqual({ subject: red, action: { name: 'read' }, resource: blueDoc });
    expect(r.unreplayable).toMatchObject({ 'unknown-tenant': 1, 'unknown-bundle': 1, 'not-json': 0 });
    expect(r.unreplayableExamples.map((u) => [u.cause, u.where])).toEqual([
      ['unknown-tenant', 'l:7'],
      ['unknown-bundle', 'l:10'],
    ]);
    expect(r.gate).toEqual({ flips: 6, maxFlips: 0, allowDirection: undefined, disagreements: 0, passed: false });
    expect(r.otherGroupFlips).toBe(0);
  });

  it('lets the gate pass within --max-flips, and counts only allow → deny with --allow-direction deny-to-allow', () => {
    expect(run(mix(), { maxFlips: 6 }).gate.passed).toBe(true);
    expect(run(mix(), { maxFlips: 5 }).gate.passed).toBe(false);
    expect(run(mix(), { maxFlips: 4, allowDirection: 'deny-to-allow' }).gate).toEqual({
      flips: 4,
      maxFlips: 4,
      allowDirection: 'deny-to-allow',
      disagreements: 0,
      passed: true,
    });
  });

  it('fails the gate when OPA disagrees with the native replay, however few flipped (as test --opa fails)', () => {
    const opa = {
      version: '1.1.0',
      decided: 9,
      counts: { replayed: 9, unchanged: 9, allowToDeny: 0, denyToAllow: 0 },
      disagreements: 1,
      disagreementExamples: [],
    };
    const builder = createReportBuilder({ ...OPTIONS, maxFlips: 100 });
    builder.opa(opa);
    expect(builder.build().gate).toEqual({ flips: 0, maxFlips: 100, allowDirection: undefined, disagreements: 1, passed: false });
    const agreeing = createReportBuilder({ ...OPTIONS, maxFlips: 100 });
    agreeing.opa({ ...opa, disagreements: 0 });
    expect(agreeing.build().gate.passed).toBe(true);
  });

  it('gives the same report whatever order groups of equal count arrive in', () => {
    const records = mix();
    const flipped = [records[4], records[2], ...records.slice(5), records[0], records[1], records[3]].filter((x) => x !== undefined);
    const a = run(records);
    const b = run(flipped);
    const shape = (x: ReplayReport) => ({ ...x, groups: x.groups.map(({ examples: _e, ...g }) => g) });
    expect(shape(b)).toEqual({ ...shape(a), unreplayableExamples: shape(b).unreplayableExamples });
  });

  it('keeps the first examples of each cause, in log order, and counts the rest', () => {
    const builder = createReportBuilder(OPTIONS);
    for (let i = 1; i <= 10; i++) builder.unreplayable({ ok: false, cause: 'not-json', where: `l:${i}`, detail: 'not JSON' });
    const r = builder.build();
    expect(r.unreplayable['not-json']).toBe(10);
    expect(r.unreplayableExamples.map((u) => u.where)).toEqual(['l:1', 'l:2', 'l:3']);
  });

  it('cuts a long logged input to MAX_EXAMPLE_BYTES of JSON text, never inside a character, and says so', () => {
    const long = { ...blueDoc, note: 'ü'.repeat(3 * MAX_EXAMPLE_BYTES) };
    const r = run([recorded({ decision: 'allow', rule: 'team-documents', principal: red, action: 'read', resource: long })]);
    const input = r.groups[0]?.examples[0]?.input;
    expect(typeof input).toBe('string');
    const [text, note] = String(input).split('…');
    expect(Buffer.byteLength(text ?? '')).toBeLessThanOrEqual(MAX_EXAMPLE_BYTES);
    expect(Buffer.byteLength(text ?? '')).toBeGreaterThan(MAX_EXAMPLE_BYTES - 2);
    expect(text).not.toContain('\ufffd');
    expect(note).toMatch(/^ \(cut: \d+ bytes of JSON\)$/);
  });

  it('keeps at most MAX_GROUPS groups however many distinct actions a hostile log holds, and counts the rest', () => {
    const builder = createReportBuilder(OPTIONS);
    const flips = MAX_GROUPS + 500;
    for (let i = 0; i < flips; i++) {
      const rec = recorded({ decision: 'allow', principal: red, action: `a-${i}`, resource: redDoc });
      const r: Replayed = { record: rec, decision: 'deny', change: 'allow-to-deny' };
      builder.line();
      builder.replayed(r);
    }
    const r = builder.build();
    expect(r.groups).toHaveLength(MAX_GROUPS);
    expect(r.otherGroupFlips).toBe(500);
    expect(r.groups.reduce((s, g) => s + g.count, 0) + r.otherGroupFlips).toBe(flips);
    expect(r.totals.allowToDeny).toBe(flips);
  });

  it('accounts for every line of random mixes: lines = replayed + outside + not replayable, flips = grouped + other', () => {
    let seed = 28;
    const random = (k: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % k;
    };
    for (let round = 0; round < 20; round++) {
      const builder = createReportBuilder(OPTIONS);
      const replay = createReplayer(world);
      const lines = 1 + random(400);
      for (let i = 0; i < lines; i++) {
        builder.line();
        const kind = random(10);
        if (kind === 0) builder.outside();
        else if (kind === 1) builder.unreplayable({ ok: false, cause: 'not-json', where: `l:${i}`, detail: 'not JSON' });
        else {
          const tenant = ['acme', 'beta', 'gone'][random(3)] ?? 'acme';
          const source = random(2) === 0 ? 'service' : 'opa';
          const rec = recorded({
            tenant,
            source,
            ...(source === 'opa' ? { bundle: ['all', 'documents', 'old'][random(3)] ?? 'all' } : {}),
            decision: random(2) === 0 ? 'allow' : 'deny',
            principal: { ...red, team: ['red', 'blue'][random(2)] ?? 'red' },
            action: ['read', 'write', 'delete', `x${random(5)}`][random(4)] ?? 'read',
            resource: [redDoc, report][random(2)] ?? redDoc,
          });
          const r = replay(rec);
          if ('ok' in r) builder.unreplayable(r);
          else builder.replayed(r);
        }
      }
      const r = builder.build();
      const notReplayed = Object.values(r.unreplayable).reduce((a, b) => a + b, 0);
      expect(r.totals.replayed + r.outsideWindow + notReplayed).toBe(lines);
      expect(r.totals.unchanged + r.totals.allowToDeny + r.totals.denyToAllow).toBe(r.totals.replayed);
      expect(r.targets.reduce((a, t) => a + t.counts.replayed, 0)).toBe(r.totals.replayed);
      expect(r.groups.reduce((a, g) => a + g.count, 0) + r.otherGroupFlips).toBe(r.totals.allowToDeny + r.totals.denyToAllow);
    }
  });

  it('reads the live list of sources when it builds', () => {
    const sources: string[] = [];
    const builder = createReportBuilder({ ...OPTIONS, sources });
    sources.push('a.log', 'b.log');
    builder.outside();
    expect(builder.build()).toMatchObject({ sources: ['a.log', 'b.log'], outsideWindow: 1 });
  });
});
