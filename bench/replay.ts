// `acl-operator replay` on a generated decision log (node bench/replay.ts, make bench-replay):
// 1,000,000 decisions of examples/ (service lines of both APIs and OPA lines of the acme bundles, as
// the decision log writes them) replayed natively against examples/ in one process pinned to one core
// (taskset when present): time, lines/s and peak RSS at 100,000 and at 1,000,000 lines (flat memory:
// the two peaks should be alike), each against a baseline measured in the same run, on the same file:
// reading it and JSON-parsing every line, nothing else. With OPA_BIN set, also the rate with --opa on
// a smaller log. Not a test: nothing passes or fails; noisy on a shared machine, so read the ratios.
import { spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { buildOffline } from '../src/pipeline/index.ts';
import { decide } from '../src/policy/index.ts';
import { worldOf } from '../src/policytest/index.ts';
import { openOpa } from '../src/opa/index.ts';
import { createOpaReplay, replayLogs } from '../src/replay/index.ts';
import { rng } from './generate.ts';

const ROOT = join(import.meta.dirname, '..');
const EXAMPLES = join(ROOT, 'examples');
/** BENCH_QUICK=1: a smoke check on 10,000 and 100,000. */
const SIZES = process.env['BENCH_QUICK'] ? [10_000, 100_000] : [100_000, 1_000_000];
/**
 * A heap far below the log's size (old space, and young space as Node sizes it for a larger heap, or
 * V8 shrinks it with the cap and promotes far more): the replay finishing under it, with the peak RSS
 * of the 100,000-line run, shows memory does not grow with the log; V8 left to itself lets garbage
 * grow the heap as the run gets longer.
 */
const HEAP_CAP = ['--max-old-space-size=96', '--max-semi-space-size=16'];
const OPA_LINES = process.env['BENCH_QUICK'] ? 2_000 : 20_000;

interface Measured {
  readonly lines: number;
  readonly ms: number;
  readonly maxRssMb: number;
  /** Heap in use after a full collection at the end: what the run still holds. */
  readonly heapMb: number;
  readonly replayed?: number;
}

/** The child: one measurement in a fresh process, printed as JSON on stdout. */
async function child(mode: string, file: string): Promise<void> {
  const started = performance.now();
  let lines = 0;
  let replayed: number | undefined;
  if (mode === 'baseline') {
    for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY })) {
      if (line.length === 0) continue;
      JSON.parse(line);
      lines++;
    }
  } else {
    const offline = await buildOffline(EXAMPLES);
    if ('unreadable' in offline) throw new Error(offline.unreadable);
    const world = worldOf(offline);
    const opa = mode === 'opa' ? await openOpa(process.env['OPA_BIN'] ?? '') : undefined;
    if (typeof opa === 'string') throw new Error(opa);
    const report = await replayLogs({
      paths: [file],
      stdin: Readable.from([]),
      world,
      report: { manifests: EXAMPLES, maxFlips: 0 },
      opa: opa === undefined ? undefined : createOpaReplay(opa, world),
    });
    if (typeof report === 'string') throw new Error(report);
    lines = report.lines;
    replayed = report.totals.replayed;
  }
  const ms = performance.now() - started;
  (globalThis as { gc?: () => void }).gc?.();
  const heapMb = process.memoryUsage().heapUsed / 1024 / 1024;
  const out: Measured = {
    lines,
    ms,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    heapMb,
    ...(replayed === undefined ? {} : { replayed }),
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

/** Writes `count` decision-log lines as the service and the OPAs of examples/ would have written them. */
async function generate(file: string, count: number): Promise<void> {
  const offline = await buildOffline(EXAMPLES);
  if ('unreadable' in offline) throw new Error(offline.unreadable);
  const acme = worldOf(offline).get('acme');
  if (acme === undefined) throw new Error('examples lost tenant acme');
  const r = rng(28);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const out = createWriteStream(file);
  const start = Date.parse('2026-11-24T00:00:00Z');
  for (let i = 0; i < count; i++) {
    const team = pick(['blue', 'red', 'green']);
    const input = {
      principal: { type: 'user', id: `u-${i % 5000}`, team, ...(r() < 0.1 ? { roles: ['admin'] } : {}) },
      action: pick(['read', 'write', 'delete', 'share']),
      resource: {
        type: 'document',
        id: `doc-${i % 20000}`,
        team: pick(['blue', 'red']),
        owner: `u-${(i * 7) % 5000}`,
        legalHold: r() < 0.1,
      },
      context: { ipAddress: `10.20.${i % 250}.${i % 200}` },
      actionProperties: {},
    };
    const d = decide(acme.index, input, acme.directory);
    const time = new Date(start + i * 50).toISOString();
    const common = `"time":"${time}","stream":"decisions","tenant":"acme"`;
    const line =
      i % 3 === 2
        ? `{${common},"source":"opa","connector":"gateways","bundle":"gateway-documents","revision":"1","agent":"a-${i % 10}","agentVersion":"1.1.0","clientIp":"10.0.3.7","decisionId":"d-${i}","decision":"${d.allow ? 'allow' : 'deny'}","path":"acl/allow","result":${d.allow},"input":${JSON.stringify(input)}}`
        : `{${common},"source":"service","endpoint":"${i % 3 === 0 ? 'authorization' : 'evaluation'}","requestId":"r-${i}","decision":"${d.allow ? 'allow' : 'deny'}","policyId":${JSON.stringify(d.policyId)},"path":"acl/allow","input":${JSON.stringify(input)}}`;
    if (!out.write(`${line}\n`)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

/** One measurement in a fresh process, on one core when taskset is there. */
function measure(mode: string, file: string, flags: readonly string[] = []): Measured {
  const node = [process.execPath, '--expose-gc', ...flags, import.meta.filename, '--child', mode, file];
  const argv = existsSync('/usr/bin/taskset') ? ['/usr/bin/taskset', '-c', '0', ...node] : node;
  const r = spawnSync(argv[0] ?? '', argv.slice(1), { encoding: 'utf8', maxBuffer: 1 << 20, env: process.env });
  if (r.status !== 0) throw new Error(`${mode} on ${file} failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as Measured;
}

const n = (x: number): string => Math.round(x).toLocaleString('en-US');

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-replay-'));
  try {
    console.log(
      `bench/replay.ts: Node ${process.version}, ${existsSync('/usr/bin/taskset') ? 'pinned to core 0 (taskset -c 0)' : 'not pinned (no taskset)'}`,
    );
    console.log('| decisions | replay | lines/s | peak RSS | heap after GC | baseline: read + JSON.parse | ratio | baseline peak RSS |');
    console.log('|---|---|---|---|---|---|---|---|');
    let capRow = '';
    for (const size of SIZES) {
      const file = join(dir, `decisions-${size}.log`);
      await generate(file, size);
      const replay = measure('replay', file);
      const base = measure('baseline', file);
      if (replay.replayed !== size) throw new Error(`replayed ${replay.replayed} of ${size}`);
      console.log(
        `| ${n(size)} | ${n(replay.ms)} ms | ${n((size / replay.ms) * 1000)} | ${replay.maxRssMb.toFixed(0)} MB | ${replay.heapMb.toFixed(1)} MB | ${n(base.ms)} ms | ${(replay.ms / base.ms).toFixed(2)}x | ${base.maxRssMb.toFixed(0)} MB |`,
      );
      if (size === SIZES.at(-1)) {
        // The proof of flat memory: the largest log again with the heap capped.
        const capped = measure('replay', file, HEAP_CAP);
        capRow = `the ${n(size)} again with the heap capped (${HEAP_CAP.join(' ')}): finished in ${n(capped.ms)} ms, peak RSS ${capped.maxRssMb.toFixed(0)} MB`;
      }
    }
    console.log(`\n${capRow}`);
    const opaBin = process.env['OPA_BIN'];
    if (opaBin) {
      const file = join(dir, `decisions-${OPA_LINES}.log`);
      await generate(file, OPA_LINES);
      const native = measure('replay', file);
      const withOpa = measure('opa', file);
      console.log(
        `\nwith --opa (${opaBin}), ${n(OPA_LINES)} decisions: ${n(withOpa.ms)} ms, ${n((OPA_LINES / withOpa.ms) * 1000)} lines/s, peak RSS ${withOpa.maxRssMb.toFixed(0)} MB`,
      );
      console.log(`  natively on the same log: ${n(native.ms)} ms (${(withOpa.ms / native.ms).toFixed(1)}x)`);
    } else console.log('\n(OPA_BIN not set: no --opa row)');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const at = process.argv.indexOf('--child');
const gen = process.argv.indexOf('--generate');
// --generate <count> <file>: only the log, e.g. to profile `acl-operator replay` on it.
if (gen !== -1) await generate(process.argv[gen + 2] ?? 'decisions.log', Number(process.argv[gen + 1]));
else if (at !== -1) await child(process.argv[at + 1] ?? '', process.argv[at + 2] ?? '');
else await main();
