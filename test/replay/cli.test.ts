import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReplayReport } from '../../src/replay/types.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'src', 'cli.ts');
const tmp = mkdtempSync(join(tmpdir(), 'acl-replay-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function cli(args: string[], input?: Buffer) {
  const env = { ...process.env };
  delete env['OPA_BIN'];
  delete env['ACL_MANIFESTS'];
  const r = spawnSync(process.execPath, [CLI, 'replay', ...args], { cwd: ROOT, encoding: 'utf8', env, ...(input ? { input } : {}) });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const user = (team: string) => ({ type: 'user', id: `u-${team}`, team });
const doc = { type: 'document', id: 'doc-blue', team: 'blue', owner: 'u-blue' };
function line(time: string, decision: 'allow' | 'deny', action: string, principal: object, policyId: string): string {
  const input = { principal, action, resource: doc, context: {}, actionProperties: {} };
  return JSON.stringify({
    time,
    stream: 'decisions',
    tenant: 'acme',
    source: 'service',
    endpoint: 'authorization',
    decision,
    policyId,
    path: 'acl/allow',
    input,
  });
}

const now = Date.now();
const recent = new Date(now - 3_600_000).toISOString();
const old = new Date(now - 3 * 86_400_000).toISOString();
/** What the examples decide: 3 allows by team-documents, 2 denied shares; one decision 3 days old. */
const LOG = [
  line(recent, 'allow', 'read', user('blue'), 'acme/team-documents'),
  line(recent, 'allow', 'write', user('blue'), 'acme/team-documents'),
  line(old, 'allow', 'read', user('blue'), 'acme/team-documents'),
  line(recent, 'deny', 'share', user('blue'), 'acme'),
  line(recent, 'deny', 'share', user('red'), 'acme'),
].join('\n');

const log = join(tmp, 'decisions.log');
const suspended = join(tmp, 'suspended');
const sharing = join(tmp, 'sharing');
beforeAll(() => {
  writeFileSync(log, `${LOG}\n`);
  // A candidate with team-documents (the first rule of acme-rules.yaml) suspended: 3 allow → deny.
  cpSync(join(ROOT, 'examples'), suspended, { recursive: true });
  const rules = join(suspended, 'acme-rules.yaml');
  writeFileSync(rules, readFileSync(rules, 'utf8').replace('state: Enforced', 'state: Suspended'));
  // A candidate where users share documents: 2 deny → allow.
  cpSync(join(ROOT, 'examples'), sharing, { recursive: true });
  writeFileSync(
    join(sharing, 'sharing.yaml'),
    'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: users-share, namespace: acme}\nspec: {state: Enforced, subjectType: user, actions: [share], resourceType: document}\n',
  );
});

const json = (stdout: string): ReplayReport => JSON.parse(stdout) as ReplayReport;

describe('acl-operator replay', () => {
  it('replays a log against the folder that decided it: nothing flips, exit 0', () => {
    const r = cli(['--manifests', 'examples', '--decisions', log, '--format', 'json']);
    expect(r.status).toBe(0);
    const report = json(r.stdout);
    expect(report.lines).toBe(5);
    expect(report.totals).toEqual({ replayed: 5, unchanged: 5, allowToDeny: 0, denyToAllow: 0 });
    expect(report.sources).toEqual([log]);
    expect(r.stderr).toBe('');
  });

  it('exits 1 when decisions flip, 0 when --max-flips allows as many', () => {
    const r = cli(['--manifests', suspended, '--decisions', log, '--format', 'json']);
    expect(r.status).toBe(1);
    expect(json(r.stdout).totals).toMatchObject({ allowToDeny: 3, denyToAllow: 0 });
    expect(cli(['--manifests', suspended, '--decisions', log, '--max-flips', '3']).status).toBe(0);
    expect(cli(['--manifests', suspended, '--decisions', log, '--max-flips', '2']).status).toBe(1);
  });

  it('lets deny → allow flips through with --allow-direction deny-to-allow, never allow → deny', () => {
    expect(cli(['--manifests', sharing, '--decisions', log]).status).toBe(1);
    expect(cli(['--manifests', sharing, '--decisions', log, '--allow-direction', 'deny-to-allow']).status).toBe(0);
    expect(cli(['--manifests', suspended, '--decisions', log, '--allow-direction', 'deny-to-allow']).status).toBe(1);
  });

  it('keeps to --since/--until, as durations back from now or RFC 3339 times', () => {
    const day = json(cli(['--manifests', suspended, '--decisions', log, '--since', '24h', '--format', 'json']).stdout);
    expect(day.outsideWindow).toBe(1);
    expect(day.totals.allowToDeny).toBe(2);
    const before = json(
      cli(['--manifests', suspended, '--decisions', log, '--until', new Date(now - 86_400_000).toISOString(), '--format', 'json']).stdout,
    );
    expect(before).toMatchObject({ outsideWindow: 4, totals: { replayed: 1, allowToDeny: 1 } });
  });

  it('reads gzip from stdin with --decisions -', () => {
    const r = cli(['--manifests', suspended, '--decisions', '-', '--format', 'json'], gzipSync(LOG));
    expect(r.status).toBe(1);
    expect(json(r.stdout)).toMatchObject({ sources: ['-'], lines: 5, totals: { allowToDeny: 3 } });
  });

  it('writes the report to --out and one summary line to stderr', () => {
    const out = join(tmp, 'report.md');
    const r = cli(['--manifests', suspended, '--decisions', log, '--format', 'markdown', '--out', out]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`Wrote ${out}`);
    expect(readFileSync(out, 'utf8')).toContain('team-documents');
  });

  it('prints every format: text, junit, markdown', () => {
    expect(cli(['--manifests', suspended, '--decisions', log]).stdout).toContain('team-documents');
    expect(cli(['--manifests', suspended, '--decisions', log, '--format', 'junit']).stdout).toMatch(/^<\?xml/);
    expect(cli(['--manifests', suspended, '--decisions', log, '--format', 'markdown']).stdout).toContain('| --- |');
  });

  it('refuses bad usage with exit 2 and a one-line reason first', () => {
    const bad: [string[], RegExp][] = [
      [['--decisions', log], /^replay needs --manifests/],
      [['--manifests', 'examples'], /^replay needs --decisions/],
      [['--manifests', 'examples', '--decisions', log, '--format', 'tap'], /^--format tap: use text, json, junit or markdown/],
      [['--manifests', 'examples', '--decisions', log, '--max-flips=-1'], /^--max-flips -1: use a whole number/],
      [['--manifests', 'examples', '--decisions', log, '--max-flips', '1.5'], /^--max-flips 1.5: use a whole number/],
      [
        ['--manifests', 'examples', '--decisions', log, '--allow-direction', 'allow-to-deny'],
        /^--allow-direction allow-to-deny: the one direction/,
      ],
      [['--manifests', 'examples', '--decisions', log, '--since', 'yesterday'], /^--since yesterday: use an RFC 3339 time/],
      [['--manifests', 'examples', '--decisions', log, '--since', '1h', '--until', '2h'], /is not before --until/],
      [['--manifests', 'examples', '--decisions', '-', '--decisions', '-'], /^--decisions -: stdin can be read once/],
      [['--manifests', 'examples', '--decisions', log, '--flips', '3'], /Unknown option '--flips'/],
      [['--manifests', 'examples', '--decisions', join(tmp, 'missing.log')], /^--decisions .*missing\.log: cannot read it: ENOENT/],
      [['--manifests', join(tmp, 'nowhere'), '--decisions', log], /^cannot read manifests from/],
      [['--manifests', 'examples', '--decisions', log, '--opa', join(tmp, 'no-opa')], /^--opa .*no-opa: cannot run it/],
    ];
    for (const [args, message] of bad) {
      const r = cli(args);
      expect({ args, status: r.status }).toEqual({ args, status: 2 });
      expect(r.stderr.split('\n')[0]).toMatch(message);
      expect(r.stdout).toBe('');
    }
  });

  it('refuses manifests with problems, as test does', () => {
    const broken = join(tmp, 'broken');
    cpSync(join(ROOT, 'examples'), broken, { recursive: true });
    writeFileSync(
      join(broken, 'bad.yaml'),
      'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: bad, namespace: acme}\nspec: {state: Enforced, subjectType: user, actions: [read], resourceType: doc, condition: "principal.a + 1 > 2"}\n',
    );
    const r = cli(['--manifests', broken, '--decisions', log]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^1 problem\(s\) in the manifests of .*; nothing was replayed/);
  });

  it.skipIf(!process.env['OPA_BIN'])('decides the replayed decisions in a real OPA too, agreeing with the native replay', () => {
    const r = cli(['--manifests', suspended, '--decisions', log, '--opa', process.env['OPA_BIN'] ?? '', '--format', 'json']);
    expect(r.status).toBe(1);
    const report = json(r.stdout);
    expect(report.totals).toMatchObject({ replayed: 5, allowToDeny: 3 });
    // Each service line on every acme bundle that selects documents: gateway-documents and gateway-all-v1.
    expect(report.opa).toMatchObject({ decided: 10, disagreements: 0 });
    expect(report.opa?.counts.allowToDeny).toBe(6);
  });

  it.skipIf(!existsSync('/usr/bin/script'))('shows progress on stderr when it is a terminal, and clears it before the summary', () => {
    const out = join(tmp, 'tty.json');
    const command = [process.execPath, CLI, 'replay', '--manifests', suspended, '--decisions', log, '--format', 'json', '--out', out].join(
      ' ',
    );
    const r = spawnSync('/usr/bin/script', ['-qec', command, '/dev/null'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.stdout).toContain('\r\x1b[K5 lines read, 5 replayed, 3 flipped');
    expect(r.stdout).toContain(`\r\x1b[KWrote ${out}`);
  });

  it('stops quietly, with the exit status of the gate, when its reader goes away (| head)', async () => {
    // 3,000 flip groups: a report larger than a pipe holds, so writing it meets the closed pipe.
    const big = join(tmp, 'many-groups.log');
    writeFileSync(
      big,
      `${Array.from({ length: 3000 }, (_, i) => line(recent, 'allow', `read-${i}`, user('blue'), 'acme/team-documents')).join('\n')}\n`,
    );
    const env = { ...process.env };
    delete env['OPA_BIN'];
    const closedEarly = async (maxFlips: string) => {
      const args = [CLI, 'replay', '--manifests', 'examples', '--decisions', big, '--format', 'json', '--max-flips', maxFlips];
      const child = spawn(process.execPath, args, { cwd: ROOT, env });
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (b: Buffer) => {
        stderr += b.toString('utf8');
      });
      const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
      return { status, stderr };
    };
    expect(await closedEarly('3000')).toEqual({ status: 0, stderr: '' });
    expect(await closedEarly('0')).toEqual({ status: 1, stderr: '' });
  });

  it('prints its usage for --help', () => {
    const r = cli(['--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Options of replay');
    expect(r.stdout).toContain('Exit status of replay');
    // The gate fails on an OPA disagreement too (docs/testing.md): the usage says so.
    expect(r.stdout).toMatch(/1 when more did or\s+\(with --opa\) OPA decided a replayed input otherwise/);
  });
});
