// The proof of `acl-operator replay` (issue 28) with real OPAs (OPA_BIN; CI runs it with OPA 1.1 and
// 0.61): the standalone service records a decision log of 11,000 decisions (POST /authorization,
// AuthZEN evaluations and batches, and what two OPA sidecars on acme's bundles decide and upload),
// and the command, run as a user runs it, replays it against the same folder (nothing flips), against
// a candidate with one rule Suspended and one condition narrowed (exactly the flips the traffic model
// predicts, per tenant and bundle, per group, with the first examples in log order), against one with
// a condition widened (only deny → allow), with --opa, with the log damaged, gzipped and rotated, in
// every format, and with bad usage. Without OPA_BIN the suite reports itself skipped.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FlipGroup, ReplayReport } from '../../src/replay/types.ts';
import { CAUSES } from '../../src/replay/types.ts';
import { opaVersion } from '../support/opa.ts';
import { expectedReport, sortKey, type Expected } from '../support/replay-expect.ts';
import { markdownTables, num, readJunit } from '../support/replay-formats.ts';
import { OTHER_PATH_QUERIES, record, type Recording } from '../support/replay-log.ts';
import { allowingRules, generate, manifestsOf, VOLUME, type FolderName, type Request } from '../support/replay-traffic.ts';

const OPA_BIN = process.env['OPA_BIN'];
const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'src', 'cli.ts');

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

const timings: string[] = [];

/** `acl-operator replay <args>` as a user runs it, OPA_BIN unset (so --opa is explicit). */
function replay(args: readonly string[], label = args.join(' '), stdin?: Buffer): Run {
  const { OPA_BIN: _unset, ...env } = process.env;
  const started = performance.now();
  const r = spawnSync(process.execPath, [CLI, 'replay', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env,
    maxBuffer: 256 * 1024 * 1024,
    ...(stdin === undefined ? {} : { input: stdin }),
  });
  const ms = performance.now() - started;
  timings.push(`${label.slice(0, 120)}: exit ${r.status} in ${Math.round(ms)} ms`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms };
}

function json(r: Run): ReplayReport {
  if (r.status === 2 || r.status === null) throw new Error(`replay exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as ReplayReport;
}

const noCauses = (): Record<string, number> => Object.fromEntries(CAUSES.map((c) => [c, 0]));

const sorted = (groups: readonly FlipGroup[]): FlipGroup[] => [...groups].sort((a, b) => sortKey(a).localeCompare(sortKey(b)));

/** Groups in one order, each example's `where` mapped by `where` (the expected side names the recorded log's lines). */
const comparable = (groups: readonly FlipGroup[], where: (w: string) => string = (w) => w): unknown[] =>
  sorted(groups).map((g) => ({ ...g, examples: g.examples.map((e) => ({ ...e, where: where(e.where) })) }));

if (OPA_BIN)
  describe(`acl-operator replay of a log recorded from serve and real OPAs (OPA_BIN=${OPA_BIN})`, () => {
    let root = '';
    let recording: Recording;
    let requests: Request[];
    const folders = {} as Record<FolderName, string>;
    const expected = {} as Record<FolderName, Expected>;
    /** The recorded log with five bad lines appended (one per cause the log can hold). */
    let damaged = '';

    beforeAll(async () => {
      opaVersion(OPA_BIN);
      root = await mkdtemp(join(tmpdir(), 'acl-replay-opa-'));
      requests = generate();
      // Every answer is checked against the model while recording: the model is the live folder's truth.
      recording = await record(
        OPA_BIN,
        root,
        requests,
        (r) =>
          allowingRules('live', r.tenant, r.input, r.route === 'everything' || r.route === 'documents' ? r.route : undefined).length > 0,
      );
      for (const name of ['live', 'narrowed', 'widened'] as const) {
        const dir = join(root, `folder-${name}`);
        await mkdir(dir);
        for (const [file, text] of Object.entries(manifestsOf(name))) await writeFile(join(dir, file), text);
        folders[name] = dir;
        expected[name] = expectedReport(name, requests, recording.file);
      }
      const lines = (await readFile(recording.file, 'utf8')).trimEnd().split('\n');
      const service = lines.find((l) => l.includes('"source":"service"') && l.includes('"tenant":"acme"')) as string;
      const opa = lines.find((l) => l.includes('"source":"opa"') && l.includes('"path":"acl/allow"')) as string;
      damaged = join(root, 'damaged.log');
      await writeFile(
        damaged,
        `${[
          ...lines,
          service.slice(0, Math.floor(service.length / 2)), // a file cut mid-write
          '{"level":30,"time":1764326000000,"msg":"Answered request"}', // a log line of another stream
          service.replace('"tenant":"acme"', '"tenant":"initech"'), // a tenant the folder lacks
          opa.replace(/"bundle":"[^"]*"/, '"bundle":"retired"'), // a bundle the folder lacks
          service.replace(/"type":"(user|service_account)"/, '"type":""'), // an input the API refuses (an empty type)
        ].join('\n')}\n`,
      );
    }, 240_000);

    afterAll(async () => {
      console.log(
        `replay proof on ${OPA_BIN}: ${recording?.lines} lines recorded ${JSON.stringify(recording?.perSource)}; ` +
          `sent in ${Math.round(recording?.sendMs ?? 0)} ms, uploads complete ${Math.round(recording?.waitMs ?? 0)} ms later\n` +
          `expected: ${JSON.stringify(Object.fromEntries(Object.entries(expected).map(([k, e]) => [k, { totals: e.totals, groups: e.groups.length, opa: e.opa }])))}\n${timings.join('\n')}`,
      );
      if (root) await rm(root, { recursive: true, force: true });
    });

    it('records every decision sent: both APIs of the service and what both OPAs uploaded, over 10,000 lines', () => {
      expect(recording.perSource).toEqual({
        'service/authorization': VOLUME.authorization,
        'service/evaluation': VOLUME.evaluation,
        'service/evaluations': VOLUME.evaluations,
        'opa/everything/acl/allow': VOLUME.everything,
        'opa/documents/acl/allow': VOLUME.documents,
        'opa/everything/acl/nothing': OTHER_PATH_QUERIES,
      });
      expect(recording.lines).toBeGreaterThanOrEqual(10_000);
    });

    it('replays the log against the folder it was recorded with: every decision replayed, nothing flipped, exit 0', () => {
      const r = replay(['--manifests', folders.live, '--decisions', recording.file, '--format', 'json'], 'same folder');
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      const report = json(r);
      expect(report.sources).toEqual([recording.file]);
      expect(report.lines).toBe(recording.lines);
      expect(report.outsideWindow).toBe(0);
      expect(report.unreplayable).toEqual({ ...noCauses(), 'not-a-decision': OTHER_PATH_QUERIES });
      expect(report.totals).toEqual(expected.live.totals);
      expect(report.totals).toEqual({ replayed: requests.length, unchanged: requests.length, allowToDeny: 0, denyToAllow: 0 });
      expect(report.targets).toEqual(expected.live.targets);
      expect(report.groups).toEqual([]);
      expect(report.gate).toEqual({ flips: 0, maxFlips: 0, allowDirection: undefined, disagreements: 0, passed: true });
    }, 60_000);

    it('predicts every flip of a candidate with one rule Suspended and one condition narrowed, per tenant, bundle and group, with the first examples; exit 1', () => {
      const r = replay(['--manifests', folders.narrowed, '--decisions', recording.file, '--format', 'json'], 'narrowed');
      expect(r.status, r.stderr).toBe(1);
      const report = json(r);
      const want = expected.narrowed;
      expect(report.totals).toEqual(want.totals);
      expect(want.totals.allowToDeny).toBeGreaterThan(100);
      expect(report.totals.denyToAllow).toBe(0);
      expect(report.targets).toEqual(want.targets);
      expect(comparable(report.groups)).toEqual(comparable(want.groups));
      // Both changes show, on the service (rule before named) and on each OPA bundle (not named).
      const rules = new Set(report.groups.map((g) => `${g.bundle}:${g.ruleBefore}`));
      expect([...rules].sort()).toEqual(['documents:null', 'everything:null', 'null:report-analysts', 'null:team-docs']);
      const counts = report.groups.map((g) => g.count);
      expect(counts).toEqual([...counts].sort((a, b) => b - a));
      expect(report.gate).toMatchObject({ flips: want.totals.allowToDeny, maxFlips: 0, passed: false });
    }, 60_000);

    it('passes the gate within --max-flips, and not one below it; --allow-direction deny-to-allow does not excuse allow → deny', () => {
      const flips = expected.narrowed.totals.allowToDeny;
      const args = ['--manifests', folders.narrowed, '--decisions', recording.file, '--format', 'json'];
      expect(replay([...args, '--max-flips', String(flips)], 'narrowed --max-flips = flips').status).toBe(0);
      expect(replay([...args, '--max-flips', String(flips - 1)], 'narrowed --max-flips = flips - 1').status).toBe(1);
      const directed = replay([...args, '--allow-direction', 'deny-to-allow'], 'narrowed --allow-direction');
      expect(directed.status).toBe(1);
      expect(json(directed).gate).toEqual({ flips, maxFlips: 0, allowDirection: 'deny-to-allow', disagreements: 0, passed: false });
    }, 60_000);

    it('finds only deny → allow flips when a condition is widened: exit 1, and 0 with --allow-direction deny-to-allow', () => {
      const args = ['--manifests', folders.widened, '--decisions', recording.file, '--format', 'json'];
      const plain = replay(args, 'widened');
      expect(plain.status, plain.stderr).toBe(1);
      const report = json(plain);
      const want = expected.widened;
      expect(report.totals).toEqual(want.totals);
      expect(want.totals.denyToAllow).toBeGreaterThan(100);
      expect(report.totals.allowToDeny).toBe(0);
      expect(report.targets).toEqual(want.targets);
      expect(comparable(report.groups)).toEqual(comparable(want.groups));
      expect(report.groups.every((g) => g.ruleBefore === null && g.ruleAfter === 'team-docs')).toBe(true);
      const directed = replay([...args, '--allow-direction', 'deny-to-allow'], 'widened --allow-direction');
      expect(directed.status, directed.stderr).toBe(0);
      expect(json(directed).gate).toEqual({ flips: 0, maxFlips: 0, allowDirection: 'deny-to-allow', disagreements: 0, passed: true });
    }, 60_000);

    it('decides the same in a real OPA on the candidate bundles (--opa): its counts as predicted, no disagreement', () => {
      const [major, minor, patch] = opaVersion(OPA_BIN);
      for (const name of ['live', 'narrowed'] as const) {
        const r = replay(
          ['--manifests', folders[name], '--decisions', recording.file, '--format', 'json', '--opa', OPA_BIN],
          `${name} --opa`,
        );
        expect(r.status, r.stderr).toBe(name === 'live' ? 0 : 1);
        const report = json(r);
        expect(report.totals).toEqual(expected[name].totals);
        expect(comparable(report.groups)).toEqual(comparable(expected[name].groups));
        expect(report.opa?.version).toBe(`${major}.${minor}.${patch}`);
        expect({ decided: report.opa?.decided, counts: report.opa?.counts }).toEqual(expected[name].opa);
        expect(report.opa?.disagreements).toBe(0);
        expect(report.opa?.disagreementExamples).toEqual([]);
      }
    }, 240_000);

    it('counts each bad line by its cause, plain, gzipped in two members, and rotated into a folder (numbered or dated), the totals adding up', async () => {
      const text = await readFile(damaged, 'utf8');
      const lines = text.trimEnd().split('\n');
      const half = Math.floor(lines.length / 2);
      const gz = join(root, 'damaged.log.gz');
      await writeFile(gz, Buffer.concat([gzipSync(`${lines.slice(0, half).join('\n')}\n`), gzipSync(`${lines.slice(half).join('\n')}\n`)]));
      const lineOf = (w: string): number => Number(w.slice(w.lastIndexOf(':') + 1));
      /** The lines cut into one part per name (oldest first), `.gz` names gzipped, plus a hidden file that must not be read; where each line lands. */
      const rotate = async (folder: string, files: readonly string[]): Promise<{ names: string[]; where: (w: string) => string }> => {
        await mkdir(folder);
        const q = Math.floor(lines.length / files.length);
        const names = files.map((f) => join(folder, f));
        for (const [k, name] of names.entries()) {
          const part = `${lines.slice(k * q, k === files.length - 1 ? lines.length : (k + 1) * q).join('\n')}\n`;
          await writeFile(name, name.endsWith('.gz') ? gzipSync(part) : part);
        }
        await writeFile(join(folder, '.decisions.log.swp'), 'an editor’s swap file, not a log\n');
        return {
          names,
          where: (w) => {
            const k = Math.min(files.length - 1, Math.floor((lineOf(w) - 1) / q));
            return `${names[k]}:${lineOf(w) - k * q}`;
          },
        };
      };
      // logrotate's names, oldest first: .3.gz, .2.gz, .1, then the live file; and with dateext.
      const rotated = await rotate(join(root, 'rotated'), ['decisions.log.3.gz', 'decisions.log.2.gz', 'decisions.log.1', 'decisions.log']);
      const dated = await rotate(join(root, 'dated'), ['decisions.log-20261126.gz', 'decisions.log-20261127', 'decisions.log']);
      const want = expected.narrowed;
      const causes: Record<string, number> = {
        ...noCauses(),
        'not-a-decision': OTHER_PATH_QUERIES,
        'not-json': 1,
        'not-ours': 1,
        'unknown-tenant': 1,
        'unknown-bundle': 1,
        'refused-input': 1,
      };
      for (const [label, decisions, sources, where] of [
        ['plain', damaged, [damaged], (w: string) => `${damaged}:${lineOf(w)}`],
        ['gzip', gz, [gz], (w: string) => `${gz}:${lineOf(w)}`],
        ['rotated', join(root, 'rotated'), rotated.names, rotated.where],
        ['dated', join(root, 'dated'), dated.names, dated.where],
      ] as const) {
        const r = replay(['--manifests', folders.narrowed, '--decisions', decisions, '--format', 'json'], `damaged ${label}`);
        expect(r.status, `${label}: ${r.stderr}`).toBe(1);
        const report = json(r);
        expect(report.sources, label).toEqual(sources);
        expect(report.lines, label).toBe(recording.lines + 5);
        expect(report.unreplayable, label).toEqual(causes);
        const unreplayable = Object.values(report.unreplayable).reduce((a, b) => a + b, 0);
        expect(report.totals.replayed + report.outsideWindow + unreplayable, label).toBe(report.lines);
        expect(report.totals, label).toEqual(want.totals);
        expect(comparable(report.groups), label).toEqual(comparable(want.groups, where));
        expect(new Set(report.unreplayableExamples.map((u) => u.cause)), label).toEqual(
          new Set(Object.keys(causes).filter((c) => (causes[c] ?? 0) > 0)),
        );
      }
    }, 120_000);

    it('writes JUnit that parses, with a failing case per flip group and the counts of the JSON report, and Markdown whose tables lex to them', async () => {
      const args = ['--manifests', folders.narrowed, '--decisions', damaged];
      const report = json(replay([...args, '--format', 'json'], 'damaged json'));
      const out = join(root, 'replay.xml');
      const written = replay([...args, '--format', 'junit', '--out', out], 'damaged junit --out');
      expect(written.status, written.stderr).toBe(1);
      expect(written.stdout).toBe('');
      // Not a terminal: no progress, only the summary of what was written.
      expect(written.stderr).toMatch(new RegExp(`^Wrote ${out}: replay: ${report.lines.toLocaleString('en-US')} lines, .*; gate .*\n$`));
      const junit = readJunit(await readFile(out, 'utf8'));
      const suites = new Map(junit.suites.map((s) => [s.name, s]));
      // One suite per tenant and bundle: the unchanged decisions pass, each flip group fails with its count.
      for (const t of report.targets) {
        const s = suites.get(t.bundle === null ? t.tenant : `${t.tenant}/${t.bundle}`);
        const groups = report.groups.filter((g) => g.tenant === t.tenant && g.bundle === t.bundle);
        expect(s?.tests, `${t.tenant}/${t.bundle}`).toBe(1 + groups.length);
        expect(s?.failures).toBe(groups.length);
        const flipped = (s?.cases ?? []).filter((c) => c.failure !== undefined).map((c) => num(/^([\d,]+)/.exec(c.failure ?? '')?.[1]));
        expect(flipped.reduce((a, b) => a + b, 0)).toBe(t.counts.allowToDeny + t.counts.denyToAllow);
        expect(s?.cases[0]?.name).toBe(
          `unchanged: ${t.counts.unchanged.toLocaleString('en-US')} of ${t.counts.replayed.toLocaleString('en-US')} decisions`,
        );
      }
      const causes = CAUSES.filter((c) => report.unreplayable[c] > 0);
      expect(suites.get('not replayable')?.skipped).toBe(causes.length);
      expect(junit.failures).toBe(report.groups.length);
      expect(junit.tests).toBe(junit.suites.reduce((a, s) => a + s.tests, 0));
      expect(junit.skipped).toBe(causes.length);

      const md = replay([...args, '--format', 'markdown'], 'damaged markdown');
      expect(md.status).toBe(1);
      const tables = markdownTables(md.stdout);
      for (const t of tables) for (const row of t.rows) expect(row.length, t.header.join('|')).toBe(t.header.length);
      const [totals, flips, lost] = [
        tables.find((t) => t.header[1] === 'Replayed'),
        tables.find((t) => t.header[0] === 'Flips'),
        tables.find((t) => t.header[0] === 'Cause'),
      ];
      const countsOf = (row: readonly string[] | undefined): number[] => (row ?? []).slice(1, 5).map(num);
      const c = report.totals;
      expect(countsOf(totals?.rows[0])).toEqual([c.replayed, c.unchanged, c.allowToDeny, c.denyToAllow]);
      expect(totals?.rows.slice(1).map((r) => [r[0], ...countsOf(r)])).toEqual(
        report.targets.map((t) => [
          t.bundle === null ? t.tenant : `${t.tenant}/${t.bundle}`,
          t.counts.replayed,
          t.counts.unchanged,
          t.counts.allowToDeny,
          t.counts.denyToAllow,
        ]),
      );
      expect(flips?.rows.map((r) => [num(r[0]), ...r.slice(1)])).toEqual(
        report.groups.map((g) => [
          g.count,
          g.change === 'allow-to-deny' ? 'allow → deny' : 'deny → allow',
          g.tenant,
          g.bundle ?? '(service)',
          g.subjectType,
          g.action,
          g.resourceType,
          g.ruleBefore ?? '—',
          g.ruleAfter ?? '—',
        ]),
      );
      expect(lost?.rows.map((r) => [r[0], num(r[1])])).toEqual(causes.map((k) => [k, report.unreplayable[k]]));
    }, 60_000);

    it('splits the log at a time with --since and --until into two windows that add up to it, and reads it from stdin', async () => {
      const text = await readFile(recording.file, 'utf8');
      const decided = text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { time: string; path: string })
        .filter((l) => l.path === 'acl/allow')
        .map((l) => Date.parse(l.time));
      // A cut in the middle of a gap of 3 ms or more between decisions: no decision sits on the boundary.
      const times = [...new Set(decided)].sort((a, b) => a - b);
      const middle = times.findIndex((t, i) => i >= times.length / 2 && (times[i + 1] ?? t) - t >= 3);
      const cut = new Date((times[middle] as number) + 1).toISOString();
      const before = decided.filter((t) => t < Date.parse(cut)).length;
      expect(before).toBeGreaterThan(1000);
      const args = ['--manifests', folders.narrowed, '--format', 'json'];
      const since = json(replay([...args, '--decisions', recording.file, '--since', cut], 'narrowed --since'));
      const until = json(replay([...args, '--decisions', recording.file, '--until', cut], 'narrowed --until'));
      expect([since.since, until.until]).toEqual([cut, cut]);
      expect(since.outsideWindow).toBe(before);
      expect(since.totals.replayed).toBe(decided.length - before);
      expect(until.outsideWindow + until.totals.replayed).toBe(decided.length);
      expect(until.totals.replayed).toBe(before);
      for (const k of ['replayed', 'unchanged', 'allowToDeny', 'denyToAllow'] as const)
        expect(since.totals[k] + until.totals[k], k).toBe(expected.narrowed.totals[k]);
      const week = json(replay([...args, '--decisions', recording.file, '--since', '7d'], 'narrowed --since 7d'));
      expect([week.outsideWindow, week.totals]).toEqual([0, expected.narrowed.totals]);
      const piped = replay([...args, '--decisions', '-'], 'narrowed stdin', gzipSync(text));
      expect(piped.status, piped.stderr).toBe(1);
      const fromStdin = json(piped);
      expect(fromStdin.sources).toEqual(['-']);
      expect(fromStdin.totals).toEqual(expected.narrowed.totals);
      expect(comparable(fromStdin.groups)).toEqual(comparable(expected.narrowed.groups, (w) => `-:${w.slice(w.lastIndexOf(':') + 1)}`));
    }, 60_000);

    it('exits 2 on bad usage, naming what is wrong', () => {
      const base = ['--manifests', folders.live, '--decisions', recording.file];
      for (const [args, pattern] of [
        [['--decisions', recording.file], /--manifests/],
        [[...base, '--max-flips', '-1'], /--max-flips/],
        [[...base, '--max-flips', 'many'], /--max-flips/],
        [[...base, '--format', 'yaml'], /--format/],
        [[...base, '--allow-direction', 'allow-to-deny'], /--allow-direction/],
        [[...base, '--since', 'yesterday'], /--since/],
        [[...base, '--bogus'], /--bogus/],
        [['--manifests', folders.live, '--decisions', join(root, 'missing.log')], /missing\.log/],
        [['--manifests', join(root, 'no-such-folder'), '--decisions', recording.file], /no-such-folder/],
        [[...base, '--opa', join(root, 'no-opa')], /no-opa/],
      ] as const) {
        const r = replay(args, `usage ${args.slice(-2).join(' ')}`);
        expect(r.status, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(2);
        expect(r.stderr, args.join(' ')).toMatch(pattern);
      }
    }, 120_000);
  });
else
  describe('acl-operator replay of a log recorded from serve and real OPAs', () => {
    it.skip('is skipped: set OPA_BIN to the path of an opa binary to run it (make test-opa)', () => {});
  });
