// `acl-operator test` on 10,000 generated cases against examples/ (node bench/policytest.ts): cases per
// second natively and with a real OPA (OPA_BIN, else /root/.cache/acl-tools/opa-1.1 when present),
// each against a baseline measured in the same run: the bare decide() loop over the same inputs, and
// the bare `opa eval` of the same inputs on the same bundles. With `--baseline <checkout>` (a checkout
// of another commit inside this one, e.g. `git worktree add scratch/base <commit>`, so that it finds
// node_modules), the same files are also read and run by that commit's code, turn about with this
// tree's, and each figure is given as a ratio to it. Not a test: nothing passes or fails.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { decide, toDecisionInput, type DecisionInput } from '../src/policy/index.ts';
import type { Snapshot } from '../src/store/index.ts';
import { buildOffline } from '../src/pipeline/index.ts';
import { rng } from './generate.ts';

const ROOT = join(import.meta.dirname, '..');
const CLI = join(ROOT, 'src', 'cli.ts');
const CASES = 10_000;
const ROUNDS = 3;
const { values: flags } = parseArgs({ options: { baseline: { type: 'string' } } });
const BASELINE = flags.baseline === undefined ? undefined : resolve(flags.baseline);
const OPA = process.env['OPA_BIN'] || (existsSync('/root/.cache/acl-tools/opa-1.1') ? '/root/.cache/acl-tools/opa-1.1' : undefined);

interface Generated {
  readonly tenant: 'acme' | 'records';
  readonly line: string;
  readonly input: DecisionInput;
}

/** One case in the compact style of the examples, and the decision input it maps to. */
function generate(i: number, r: () => number): Generated {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  if (i % 2 === 0) {
    const team = pick(['blue', 'red']);
    const other = pick(['blue', 'red']);
    const action = pick(['read', 'write', 'delete', 'share']);
    const roles = r() < 0.2 ? ', roles: [admin]' : '';
    const line = `  - {name: case ${i}, subject: {type: user, id: u${i}, properties: {team: ${team}${roles}}}, action: ${action}, resource: {type: document, id: d${i}, properties: {team: ${other}, owner: u${i}, legalHold: false}}, expect: EXPECT}`;
    const principal = { type: 'user', id: `u${i}`, team, ...(roles ? { roles: ['admin'] } : {}) };
    const input = { principal, action, resource: { type: 'document', id: `d${i}`, team: other, owner: `u${i}`, legalHold: false } };
    return { tenant: 'acme', line, input: decisionInput(input) };
  }
  const who = pick(['alice', 'bob', 'carol', 'dave']);
  const record = pick(['record-1', 'record-2', 'record-3']);
  const action = pick(['read', 'write', 'delete']);
  const soft = action === 'delete' && r() < 0.5;
  const actionText = soft ? '{name: delete, properties: {soft: true}}' : action;
  const line = `  - {name: case ${i}, subject: {id: ${who}}, action: ${actionText}, resource: {id: ${record}}, expect: EXPECT}`;
  const input = {
    principal: { type: 'user', id: who },
    action,
    resource: { type: 'record', id: record },
    actionProperties: soft ? { soft: true } : {},
  };
  return { tenant: 'records', line, input: decisionInput(input) };
}

function decisionInput(raw: unknown): DecisionInput {
  const d = toDecisionInput(JSON.parse(JSON.stringify(raw)));
  if (typeof d === 'string') throw new Error(d);
  return d;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The CLI on the test files of `dir` (every case must pass): its wall time and the seconds its report measured. */
function cliRun(dir: string, out: string, opa?: string, cli = CLI): { wallMs: number; reportSeconds: number } {
  const args = [
    cli,
    'test',
    '--manifests',
    join(ROOT, 'examples'),
    '--tests',
    dir,
    '--format',
    'json',
    '--out',
    out,
    ...(opa ? ['--opa', opa] : []),
  ];
  const started = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', env: { ...process.env, OPA_BIN: '' } });
  const wallMs = performance.now() - started;
  if (r.status !== 0) throw new Error(`acl-operator test exited ${r.status}: ${r.stderr}`);
  const report = JSON.parse(readFileSync(out, 'utf8')) as { summary: { seconds: number } };
  return { wallMs, reportSeconds: report.summary.seconds };
}

/** The case as written, expecting what the evaluator decides (so every case passes). */
function written(c: Generated, tenants: Snapshot['tenants']): string {
  const t = tenants.get(c.tenant);
  const allow = t !== undefined && decide(t.index, c.input, t.directory).allow;
  return c.line.replace('EXPECT', allow ? 'allow' : 'deny');
}

/** One cold read of the files of `dir` by `checkout`'s reader of test files, in a fresh process (bench/policytest-read.ts). */
function readRun(checkout: string, dir: string): { cpuMs: number; wallMs: number } {
  const files = ['acme', 'records'].map((t) => join(dir, `${t}.test.yaml`));
  const r = spawnSync(process.execPath, [join(ROOT, 'bench', 'policytest-read.ts'), checkout, ...files], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`reading with ${checkout} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as { cpuMs: number; wallMs: number };
}

/** This tree against the checkout of another commit: the same files read, and run natively, turn about. */
function compareWith(checkout: string, dir: string, work: string): void {
  const ours: { read: { cpuMs: number; wallMs: number }; cli: { wallMs: number; reportSeconds: number } }[] = [];
  const theirs: typeof ours = [];
  const rounds = ROUNDS * 2 + 1;
  for (let i = 0; i < rounds; i++) {
    ours.push({ read: readRun(ROOT, dir), cli: cliRun(dir, join(work, 'ours.json')) });
    theirs.push({ read: readRun(checkout, dir), cli: cliRun(dir, join(work, 'theirs.json'), undefined, join(checkout, 'src', 'cli.ts')) });
  }
  const line = (what: string, pick: (r: (typeof ours)[number]) => number): void => {
    const a = median(ours.map(pick));
    const b = median(theirs.map(pick));
    console.log(`  ${what.padEnd(46)} ${fmt(a).padStart(6)} ms  baseline ${fmt(b).padStart(6)} ms  ratio ${fmt(a / b, 2)}x`);
  };
  console.log('');
  console.log(`Against ${checkout} (the same files, runs turn about, median of ${rounds})`);
  line('reading the test files, fresh process (CPU)', (r) => r.read.cpuMs);
  line('reading the test files, fresh process (wall)', (r) => r.read.wallMs);
  line('acl-operator test, as its report measures', (r) => r.cli.reportSeconds * 1000);
  line('acl-operator test, the CLI process (wall)', (r) => r.cli.wallMs);
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'acl-bench-ptest-'));
  try {
    const offline = await buildOffline(join(ROOT, 'examples'));
    if ('unreadable' in offline) throw new Error(offline.unreadable);
    const tenants = offline.snapshot.tenants;
    const r = rng(20261124);
    const cases = Array.from({ length: CASES }, (_, i) => generate(i, r));
    const big = join(work, 'big');
    const one = join(work, 'one');
    await mkdir(big);
    await mkdir(one);
    for (const tenant of ['acme', 'records'] as const) {
      const own = cases.filter((c) => c.tenant === tenant);
      const defaults = tenant === 'records' ? 'defaults:\n  subject: {type: user}\n  resource: {type: record}\n' : '';
      await writeFile(
        join(big, `${tenant}.test.yaml`),
        `tenant: ${tenant}\n${defaults}cases:\n${own.map((c) => written(c, tenants)).join('\n')}\n`,
      );
    }
    await writeFile(join(one, 'one.test.yaml'), `tenant: acme\ncases:\n${written(cases[0] as Generated, tenants)}\n`);
    const bytes = (await readFile(join(big, 'acme.test.yaml'))).length + (await readFile(join(big, 'records.test.yaml'))).length;

    console.log(`acl-operator test benchmark: node ${process.version}, ${new Date().toISOString()}`);
    console.log(
      `${fmt(CASES)} generated cases against examples/ (half acme documents, half records with its directory), ${fmt(bytes / 1024)} KiB of YAML, median of ${ROUNDS}`,
    );

    // Baseline: decide() over the same inputs, with the tenants' indexes and directories of the same build.
    let allowed = 0;
    const loop = (): number => {
      const started = performance.now();
      allowed = 0;
      for (const c of cases) {
        const t = tenants.get(c.tenant);
        if (t && decide(t.index, c.input, t.directory).allow) allowed++;
      }
      return performance.now() - started;
    };
    loop();
    const decideMs = median(Array.from({ length: 5 }, loop));

    const native = Array.from({ length: ROUNDS }, () => cliRun(big, join(work, 'native.json')));
    const startup = Array.from({ length: ROUNDS }, () => cliRun(one, join(work, 'one.json')));
    const reportMs = median(native.map((n) => n.reportSeconds * 1000));
    const wallMs = median(native.map((n) => n.wallMs));
    const startupMs = median(startup.map((n) => n.wallMs));
    console.log('');
    console.log('Native (the evaluator POST /authorization uses)');
    console.log(
      `  baseline, decide() over the same inputs:     ${fmt(decideMs, 1).padStart(8)} ms  ${fmt((CASES / decideMs) * 1000).padStart(10)} cases/s (${fmt(allowed)} allowed)`,
    );
    console.log(
      `  acl-operator test, as its report measures:   ${fmt(reportMs, 1).padStart(8)} ms  ${fmt((CASES / reportMs) * 1000).padStart(10)} cases/s  ratio ${fmt(reportMs / decideMs, 1)}x (read, check, map, decide, report)`,
    );
    console.log(
      `  end to end, the CLI process (wall):          ${fmt(wallMs).padStart(8)} ms; the same CLI on 1 case ${fmt(startupMs)} ms, so ${fmt(CASES)} cases add ${fmt(wallMs - startupMs)} ms`,
    );

    if (BASELINE !== undefined) compareWith(BASELINE, big, work);

    if (OPA === undefined) {
      console.log('\nWith OPA: skipped (set OPA_BIN)');
      return;
    }
    // Baseline: the bare `opa eval` of the same inputs on the bundles they go to, one after the other.
    const bundles = [...tenants.values()].flatMap((t) => [...t.bundles.values()]);
    const opaEval = async (): Promise<number> => {
      let total = 0;
      for (const b of bundles) {
        const archive = join(work, `${b.tenant}-${b.name}.tar.gz`);
        await writeFile(archive, b.built.bytes);
        const inputs = JSON.stringify(cases.filter((c) => c.tenant === b.tenant).map((c) => c.input));
        const query = '[allowed | some i; doc := input[i]; allowed := data.acl.allow with input as doc]';
        const started = performance.now();
        const r = spawnSync(OPA, ['eval', '--format', 'json', '--bundle', archive, '--stdin-input', query], {
          input: inputs,
          maxBuffer: 256 * 1024 * 1024,
        });
        total += performance.now() - started;
        if (r.status !== 0) throw new Error(`opa eval failed: ${r.stderr}`);
      }
      return total;
    };
    const evals: number[] = [];
    for (let i = 0; i < ROUNDS; i++) evals.push(await opaEval());
    const evalMs = median(evals);
    const withOpa = Array.from({ length: ROUNDS }, () => cliRun(big, join(work, 'opa.json'), OPA));
    const opaReportMs = median(withOpa.map((n) => n.reportSeconds * 1000));
    const opaWallMs = median(withOpa.map((n) => n.wallMs));
    const version = spawnSync(OPA, ['version'], { encoding: 'utf8' }).stdout.split('\n')[0] ?? '';
    console.log('');
    console.log(`With OPA (${version}, ${OPA}); ${bundles.length} bundles: acme's document cases go to both acme bundles`);
    console.log(`  baseline, bare opa eval per bundle, in turn:  ${fmt(evalMs).padStart(7)} ms`);
    console.log(
      `  acl-operator test --opa, as its report measures: ${fmt(opaReportMs).padStart(7)} ms  ${fmt((CASES / opaReportMs) * 1000).padStart(8)} cases/s  ratio ${fmt(opaReportMs / evalMs, 2)}x (bundles 2 at a time)`,
    );
    console.log(`  end to end, the CLI process (wall):            ${fmt(opaWallMs).padStart(7)} ms`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
