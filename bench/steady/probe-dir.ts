// In-process: a 500,000-entity tenant, one Directory edit at a time, event-loop gaps over 50 ms with
// their times (compare with --trace-gc). Run pinned: taskset -c 0 node --trace-gc bench/steady/probe-dir.ts
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { configFromFlags } from '../../src/config.ts';
import { LOCAL_LISTENERS } from '../../test/support/service.ts';
import { startService } from '../../src/modes/index.ts';
import { directoryFile, directoryTenant } from './tenants.ts';
const DIRS = Number(process.env['DIRS'] ?? 100);
const root = await mkdtemp(join(tmpdir(), 'probe-dir-'));
const manifests = join(root, 'm');
await mkdir(manifests);
await writeFile(join(manifests, 'people.yaml'), directoryTenant());
for (let d = 0; d < DIRS; d++) await writeFile(join(manifests, `dir-${String(d).padStart(3, '0')}.yaml`), directoryFile(d, 0));
const config = configFromFlags(['--manifests', manifests, '--state-dir', join(root, 'state'), ...LOCAL_LISTENERS, '--log-level', 'silent']);
const svc = await startService(config, { log: pino({ level: 'silent' }), debounceMs: 3_600_000, racyWindowMs: 0, settleMs: 0 });
let last = performance.now();
const iv = setInterval(() => {
  const n = performance.now();
  if (n - last > 50) console.log(`gap ${(n - last).toFixed(0)} ms ending at ${n.toFixed(0)}`);
  last = n;
}, 1);
for (let k = 1; k <= 2; k++) {
  await writeFile(join(manifests, 'dir-000.yaml'), directoryFile(0, k));
  const t1 = performance.now();
  console.log(`edit ${k} at ${t1.toFixed(0)}`);
  await svc.source.rescan();
  console.log(`  scanned at ${performance.now().toFixed(0)}`);
  await svc.controller.settled();
  console.log(`  served at ${performance.now().toFixed(0)} (${(performance.now() - t1).toFixed(0)} ms)`);
  await svc.controller.idle();
  await new Promise((r) => setTimeout(r, 500));
}
clearInterval(iv);
await svc.stop();
