// Where an edit's CPU goes: the service's event loop (its thread's CPU time) and the rest of the process
// (background threads, GC helpers), over edits of one rule among 10,000 with no load, and each
// edit's time from the file written to the new ETag served (long poll).
//   node bench/steady/cpu.ts                               this tree
//   BENCH_BASELINE=<another checkout> node bench/steady/cpu.ts   that tree too, in rotated rounds, with ratios
//   PROFILE=1 ...                                          a CPU profile of this tree's edits
//   BENCH_SETTLE_MS=0 ...                                  no debounce and no settle interval (the pipeline alone)
// Each service waits until it is quiet (the first start's status writes and lint done) before its edits.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pinToLoadCore, SERVER_CORE } from '../http/cores.ts';
import { spawnPinned, type Pinned } from '../http/ipc.ts';
import { fmt } from '../http/report.ts';
import { BUNDLE_PATH } from '../http/tenant.ts';
import { currentEtag, median, nextEtag } from './measure.ts';
import type { SteadyCommands, SteadyReady } from './server.ts';
import { rulesFile, tenantRules, writeFolder } from './tenants.ts';
import { baselineTree } from '../baseline-tree.ts';

const BASELINE = baselineTree();
const PROFILE = process.env['PROFILE'] === '1';
const SETTLE_MS = Number(process.env['BENCH_SETTLE_MS'] ?? '300');
const DEBOUNCE_MS = SETTLE_MS === 0 ? 0 : 100;
const EDITS = Number(process.env['BENCH_EDITS'] ?? '10');
const ROUNDS = BASELINE ? 2 : 1;
const EDIT_EVERY_MS = 1000;

type Server = Pinned<SteadyCommands, SteadyReady>;
interface Tree {
  readonly name: string;
  readonly server: Server;
  readonly folder: string;
  readonly cpuMs: number[];
  readonly loopMs: number[];
  readonly servedMs: number[];
  edits: number;
}

pinToLoadCore();
const root = await mkdtemp(join(tmpdir(), 'acl-steady-cpu-'));
const rules = tenantRules(10_000);

async function start(name: string, checkout: string): Promise<Tree> {
  const folder = join(root, name, 'm');
  await mkdir(folder, { recursive: true });
  await writeFolder(folder, rules, false);
  const server = await spawnPinned<SteadyCommands, SteadyReady>(
    SERVER_CORE,
    join(checkout, 'bench/steady/server.ts'),
    ['--folder', folder, '--state', join(root, name, 's'), '--settle-ms', String(SETTLE_MS), '--debounce-ms', String(DEBOUNCE_MS)],
    [],
    checkout,
  );
  return { name, server, folder, cpuMs: [], loopMs: [], servedMs: [], edits: 0 };
}

/**
 * Waits until the service used under 5% of a core for two seconds (the first start's writes and
 * lint are done), at most a minute.
 */
async function quiet(s: Server): Promise<void> {
  let before = await s.call('stats', null);
  for (let n = 0; n < 30; n++) {
    await new Promise((r) => setTimeout(r, 2000));
    const now = await s.call('stats', null);
    const ms = (now.cpuUs - before.cpuUs) / 1000;
    if (ms < 100) return;
    process.stderr.write(`waiting for quiet: ${ms.toFixed(0)} ms of CPU in 2 s\n`);
    before = now;
  }
}

/**
 * CPU time of the service's main thread (the event loop), ms, from /proc: clock ticks of 10 ms, read
 * from outside so that any tree's server.ts is measured alike (busy time would count waiting for the
 * core on a loaded machine).
 */
async function loopCpuMs(s: Server): Promise<number> {
  const stat = await readFile(`/proc/${s.pid}/task/${s.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** EDITS edits, one a second: CPU per edit (process, event loop) and each edit's time to served. */
async function editRound(t: Tree): Promise<void> {
  const { port, token } = t.server.ready;
  let etag = await currentEtag(port, BUNDLE_PATH, token);
  const a = await t.server.call('stats', null);
  const loopA = await loopCpuMs(t.server);
  for (let i = 0; i < EDITS; i++) {
    const started = performance.now();
    const waiting = nextEtag(port, BUNDLE_PATH, token, etag);
    await writeFile(join(t.folder, 'rules.yaml'), rulesFile(rules, ++t.edits));
    const written = performance.now();
    const next = await waiting;
    etag = next.etag;
    t.servedMs.push(next.atMs - written);
    const wait = EDIT_EVERY_MS - (performance.now() - started);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const b = await t.server.call('stats', null);
  t.cpuMs.push((b.cpuUs - a.cpuUs) / EDITS / 1000);
  t.loopMs.push(((await loopCpuMs(t.server)) - loopA) / EDITS);
}

/** Idle CPU per second (timers, the periodic rescan), so an edit's figure can be read net of it. */
async function idle(t: Tree): Promise<number> {
  const a = await t.server.call('stats', null);
  await new Promise((r) => setTimeout(r, 3000));
  const b = await t.server.call('stats', null);
  return (b.cpuUs - a.cpuUs) / 3 / 1000;
}

try {
  const trees = [await start('this', resolve(fileURLToPath(new URL('../..', import.meta.url))))];
  if (BASELINE) trees.push(await start('baseline', resolve(BASELINE)));
  for (const t of trees) await quiet(t.server);
  if (PROFILE) await trees[0]?.server.call('startProfile', null);
  for (let round = 0; round < ROUNDS; round++) {
    // Rotated, so neither tree always goes first.
    const order = round % 2 === 0 ? trees : [...trees].reverse();
    for (const t of order) {
      await editRound(t);
      await quiet(t.server);
    }
  }
  if (PROFILE) await trees[0]?.server.call('stopProfile', join(root, 'p.cpuprofile'));
  const idles = new Map<Tree, number>();
  for (const t of trees) idles.set(t, await idle(t));
  const settle = SETTLE_MS === 0 ? 'no debounce, no settle interval' : `debounce ${DEBOUNCE_MS} ms, settle ${SETTLE_MS} ms`;
  console.log(`one rule edited among 10,000, ${EDITS} edits a round, one a second, ${ROUNDS} round(s), ${settle}, no load`);
  console.log('| tree | process CPU ms/edit | event loop CPU ms/edit | idle CPU ms/s | served median ms | served max ms |');
  console.log('|---|---|---|---|---|---|');
  for (const t of trees)
    console.log(
      `| ${t.name} | ${t.cpuMs.map((x) => fmt(x, 1)).join(', ')} | ${t.loopMs.map((x) => fmt(x, 1)).join(', ')} | ${fmt(idles.get(t) ?? NaN, 1)} | ${fmt(median(t.servedMs))} | ${fmt(Math.max(...t.servedMs))} |`,
    );
  const [ours, base] = trees;
  if (ours && base) {
    const mean = (xs: readonly number[]): number => xs.reduce((x, y) => x + y, 0) / xs.length;
    console.log(
      `this / baseline: process CPU ${fmt(mean(ours.cpuMs) / mean(base.cpuMs), 2)}×, event loop ${fmt(mean(ours.loopMs) / mean(base.loopMs), 2)}×, served median ${fmt(median(ours.servedMs) / median(base.servedMs), 2)}×`,
    );
  }
  if (PROFILE) {
    const { summariseProfile } = await import('../http/cpuprofile.ts');
    for (const l of summariseProfile(JSON.parse(await readFile(join(root, 'p.cpuprofile'), 'utf8')), 40)) console.log(l);
  }
  for (const t of trees) await t.server.stop();
} finally {
  await rm(root, { recursive: true, force: true });
}
