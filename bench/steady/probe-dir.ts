// In-process: a 500,000-entity tenant, one Directory edit at a time: served time, CPU per edit (the
// process and the event loop's thread), event-loop gaps over 50 ms, and heap and RSS per entity
// after a full collection. Run pinned: taskset -c 0 node --expose-gc --trace-gc bench/steady/probe-dir.ts
//   BENCH_BASELINE=<checkout>  also runs this probe on another checkout's code (same process order:
//                              baseline, then this tree) and prints each figure's ratio to it
//   HEAP_SNAPSHOT=<file>       writes a heap snapshot after the load (bench/steady/heap-types.ts sums it by type)
//   PROFILE=1                  a CPU profile of the event loop over the edits, summarised
//   DIRS=<n>                   Directories of 5,000 entities (100)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';
import { baselineTree } from '../baseline-tree.ts';
import { summariseProfile } from '../http/cpuprofile.ts';
import { startProfile, stopProfile } from '../http/servers/profiler.ts';
import { directoryFile, directoryTenant, PER_DIRECTORY } from './tenants.ts';

const DIRS = Number(process.env['DIRS'] ?? 100);
const EDITS = 3;

interface Figures {
  readonly entities: number;
  readonly heapMb: number;
  readonly rssMb: number;
  readonly heapPerEntity: number;
  readonly rssPerEntity: number;
  /** Per edit: file written → settled (served). */
  readonly servedMs: number[];
  readonly cpuMs: number[];
  readonly loopCpuMs: number[];
  readonly longestGapMs: number;
}

/** CPU time of this process's main thread (the event loop), in ms, from /proc. */
function loopCpuMs(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error('run with node --expose-gc');
  g();
  g();
}

/** The probe itself, on the service code of the checkout at `root`. */
async function probe(root: string): Promise<Figures> {
  const src = (p: string): string => pathToFileURL(join(root, p)).href;
  const { configFromFlags } = (await import(src('src/config.ts'))) as typeof import('../../src/config.ts');
  const { startService } = (await import(src('src/modes/index.ts'))) as typeof import('../../src/modes/index.ts');
  const { LOCAL_LISTENERS } = (await import(src('test/support/service.ts'))) as typeof import('../../test/support/service.ts');
  const { pino } = await import('pino');
  const dir = await mkdtemp(join(tmpdir(), 'probe-dir-'));
  const manifests = join(dir, 'm');
  await mkdir(manifests);
  await writeFile(join(manifests, 'people.yaml'), directoryTenant());
  for (let d = 0; d < DIRS; d++) await writeFile(join(manifests, `dir-${String(d).padStart(3, '0')}.yaml`), directoryFile(d, 0));
  gc();
  const heap0 = process.memoryUsage();
  const config = configFromFlags([
    '--manifests',
    manifests,
    '--state-dir',
    join(dir, 'state'),
    ...LOCAL_LISTENERS,
    '--log-level',
    'silent',
  ]);
  const svc = await startService(config, { log: pino({ level: 'silent' }), debounceMs: 3_600_000, racyWindowMs: 0, settleMs: 0 });
  await svc.controller.idle();
  gc();
  const loaded = process.memoryUsage();
  const entities = DIRS * PER_DIRECTORY;
  const snapshot = process.env['HEAP_SNAPSHOT'];
  if (snapshot) console.error(`heap snapshot: ${writeHeapSnapshot(snapshot)}`);
  let last = performance.now();
  let longest = 0;
  const iv = setInterval(() => {
    const n = performance.now();
    if (n - last > 50) console.error(`gap ${(n - last).toFixed(0)} ms ending at ${n.toFixed(0)}`);
    longest = Math.max(longest, n - last);
    last = n;
  }, 1);
  const profiling = process.env['PROFILE'] === '1';
  if (profiling) await startProfile();
  const servedMs: number[] = [];
  const cpuMs: number[] = [];
  const loopMs: number[] = [];
  for (let k = 1; k <= EDITS; k++) {
    const content = directoryFile(0, k);
    last = performance.now();
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const l0 = loopCpuMs();
    await writeFile(join(manifests, 'dir-000.yaml'), content);
    await svc.source.rescan();
    await svc.controller.settled();
    servedMs.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpuMs.push((c.user + c.system) / 1000);
    loopMs.push(loopCpuMs() - l0);
    await svc.controller.idle();
    await new Promise((r) => setTimeout(r, 300));
  }
  clearInterval(iv);
  if (profiling) {
    const file = join(dir, 'edits.cpuprofile');
    await stopProfile(file);
    for (const l of summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof summariseProfile>[0], 30))
      console.error(l);
  }
  await svc.stop();
  await rm(dir, { recursive: true, force: true });
  return {
    entities,
    heapMb: loaded.heapUsed / 2 ** 20,
    rssMb: loaded.rss / 2 ** 20,
    heapPerEntity: (loaded.heapUsed - heap0.heapUsed) / entities,
    rssPerEntity: (loaded.rss - heap0.rss) / entities,
    servedMs,
    cpuMs,
    loopCpuMs: loopMs,
    longestGapMs: longest,
  };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

function lines(f: Figures): [string, number][] {
  return [
    ['served after an edit, median ms', median(f.servedMs)],
    ['process CPU per edit, median ms', median(f.cpuMs)],
    ['event-loop thread CPU per edit, median ms', median(f.loopCpuMs)],
    ['longest event-loop gap during the edits, ms', f.longestGapMs],
    ['heap after a full GC, MB', f.heapMb],
    ['heap per entity, bytes', f.heapPerEntity],
    ['RSS per entity, bytes', f.rssPerEntity],
  ];
}

const childRoot = process.env['PROBE_ROOT'];
if (childRoot !== undefined) {
  // A child: one probe, its figures as the last line.
  console.log(JSON.stringify(await probe(childRoot)));
} else {
  const here = resolve(fileURLToPath(new URL('../..', import.meta.url)));
  const baseline = baselineTree();
  const run = (root: string): Figures => {
    const out = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
      env: { ...process.env, PROBE_ROOT: root },
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 1 << 26,
    }).toString();
    const json = out.split('\n').findLast((l) => l.startsWith('{"entities"'));
    if (json === undefined) throw new Error(`no figures from the probe of ${root}`);
    return JSON.parse(json) as Figures;
  };
  console.log(`probe-dir: ${DIRS} Directories of ${PER_DIRECTORY} entities, ${EDITS} edits of one entity, ${new Date().toISOString()}`);
  const base = baseline ? run(resolve(baseline)) : undefined;
  const now = run(here);
  console.log(
    `per edit (served, process CPU, loop CPU): ${now.servedMs.map((x, i) => `${x.toFixed(0)}/${now.cpuMs[i]?.toFixed(0)}/${now.loopCpuMs[i]?.toFixed(0)}`).join('  ')} ms`,
  );
  if (base)
    console.log(
      `baseline per edit: ${base.servedMs.map((x, i) => `${x.toFixed(0)}/${base.cpuMs[i]?.toFixed(0)}/${base.loopCpuMs[i]?.toFixed(0)}`).join('  ')} ms`,
    );
  const baseLines = base ? lines(base) : undefined;
  for (const [i, [name, value]] of lines(now).entries()) {
    const b = baseLines?.[i]?.[1];
    console.log(`${name}: ${value.toFixed(1)}${b !== undefined ? `  (baseline ${b.toFixed(1)}, ratio ${(value / b).toFixed(2)})` : ''}`);
  }
}
