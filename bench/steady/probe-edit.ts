// In-process: one rule edited among 10,000, the phases of each edit timed in CPU (this thread, and
// the whole process): the scan that sees the new content, the scan that finds it settled, the drain
// that publishes it, and what follows the publish (lint, status writes). No watch: the probe calls
// the scans itself, so each phase is measured alone.
//   taskset -c 0 node bench/steady/probe-edit.ts          (EDITS=n, SETTLE_MS=ms; PROFILE=1: the edits' CPU profile)
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { configFromFlags } from '../../src/config.ts';
import { startService } from '../../src/modes/index.ts';
import { LOCAL_LISTENERS } from '../../test/support/service.ts';
import { summariseProfile } from '../http/cpuprofile.ts';
import { startProfile, stopProfile } from '../http/servers/profiler.ts';
import { rulesFile, tenantRules, writeFolder } from './tenants.ts';

const EDITS = Number(process.env['EDITS'] ?? 20);
const SETTLE_MS = Number(process.env['SETTLE_MS'] ?? 300);
const root = await mkdtemp(join(tmpdir(), 'probe-edit-'));
const manifests = join(root, 'm');
await mkdir(manifests);
const rules = tenantRules(10_000);
await writeFolder(manifests, rules, false);
const config = configFromFlags(['--manifests', manifests, '--state-dir', join(root, 'state'), ...LOCAL_LISTENERS, '--log-level', 'silent']);
const svc = await startService(config, {
  log: pino({ level: 'silent' }),
  debounceMs: 3_600_000,
  racyWindowMs: 0,
  settleMs: SETTLE_MS,
  activityFlushMs: 3_600_000,
});
await svc.controller.idle();
const PROFILE = process.env['PROFILE'] === '1';
if (PROFILE) await startProfile();

const thread = (): number => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};
const proc = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const phases = ['scan (new content)', 'scan (settled)', 'drain to publish', 'after publish'] as const;
const loop = new Map<string, number[]>(phases.map((p) => [p, []]));
const all = new Map<string, number[]>(phases.map((p) => [p, []]));
async function timed(phase: (typeof phases)[number], f: () => Promise<unknown>): Promise<void> {
  const t = thread();
  const p = proc();
  await f();
  loop.get(phase)?.push(thread() - t);
  all.get(phase)?.push(proc() - p);
}
for (let k = 1; k <= EDITS; k++) {
  await writeFile(join(manifests, 'rules.yaml'), rulesFile(rules, k));
  await timed('scan (new content)', () => svc.source.rescan());
  if (SETTLE_MS > 0) {
    await new Promise((r) => setTimeout(r, SETTLE_MS + 20));
    await timed('scan (settled)', () => svc.source.rescan());
  }
  await timed('drain to publish', () => svc.controller.settled());
  await timed('after publish', () => svc.controller.idle());
}
// The first edits warm the caches: the median of the rest.
const median = (xs: readonly number[]): number => {
  const s = xs.slice(Math.min(2, xs.length - 1)).sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] ?? NaN;
};
console.log(`one rule edited among 10,000, ${EDITS} edits, settle ${SETTLE_MS} ms; median CPU ms per edit`);
console.log('| phase | event loop | whole process |');
console.log('|---|---|---|');
let sumLoop = 0;
let sumAll = 0;
for (const p of phases) {
  const l = median(loop.get(p) ?? []);
  const a = median(all.get(p) ?? []);
  if (Number.isNaN(l)) continue;
  sumLoop += l;
  sumAll += a;
  console.log(`| ${p} | ${l.toFixed(1)} | ${a.toFixed(1)} |`);
}
console.log(`| sum | ${sumLoop.toFixed(1)} | ${sumAll.toFixed(1)} |`);
if (PROFILE) {
  await stopProfile(join(root, 'p.cpuprofile'));
  const { readFile } = await import('node:fs/promises');
  for (const l of summariseProfile(JSON.parse(await readFile(join(root, 'p.cpuprofile'), 'utf8')), 45)) console.log(l);
}
await svc.stop();
await rm(root, { recursive: true, force: true });
