// Where an edit's CPU goes: the service's event loop (busy time) and the rest of the process
// (background threads, GC helpers), over 10 edits of one rule among 10,000 with no load.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnPinned } from '../http/ipc.ts';
import { SERVER_CORE } from '../http/cores.ts';
import type { SteadyCommands, SteadyReady } from './server.ts';
import { rulesFile, tenantRules, writeFolder } from './tenants.ts';

const root = await mkdtemp(join(tmpdir(), 'acl-steady-cpu-'));
const folder = join(root, 'm');
await mkdir(folder);
const rules = tenantRules(10_000);
await writeFolder(folder, rules, false);
const server = await spawnPinned<SteadyCommands, SteadyReady>(SERVER_CORE, fileURLToPath(new URL('./server.ts', import.meta.url)), [
  '--folder',
  folder,
  '--state',
  join(root, 's'),
]);
await new Promise((r) => setTimeout(r, 2000));
const PROFILE = process.env['PROFILE'] === '1';
if (PROFILE) await server.call('startProfile', null);
const a = await server.call('stats', null);
for (let n = 1; n <= 10; n++) {
  await writeFile(join(folder, 'rules.yaml'), rulesFile(rules, n));
  await new Promise((r) => setTimeout(r, 1000));
}
const b = await server.call('stats', null);
console.log(
  `per edit: process CPU ${((b.cpuUs - a.cpuUs) / 10 / 1000).toFixed(0)} ms, event loop busy ${((b.loopBusyMs - a.loopBusyMs) / 10).toFixed(0)} ms`,
);
if (PROFILE) {
  await server.call('stopProfile', join(root, 'p.cpuprofile'));
  const { summariseProfile } = await import('../http/cpuprofile.ts');
  const { readFile } = await import('node:fs/promises');
  for (const l of summariseProfile(JSON.parse(await readFile(join(root, 'p.cpuprofile'), 'utf8')), 40)) console.log(l);
}
await server.stop();
await rm(root, { recursive: true, force: true });
