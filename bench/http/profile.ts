// Where a variant's server time goes: the server and the load generator pinned as in bench/http.ts,
// a warm-up, then a CPU profile of the server over a saturated run, summarised.
//   node bench/http/profile.ts decide [seconds]      also: raw, decideLog, decide10k, poll304
//   node bench/http/profile.ts --summarise <file.cpuprofile>
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { summariseProfile, type Profile } from './cpuprofile.ts';
import type { Pinned } from './ipc.ts';
import type { ServerCommands } from './servers/stats.ts';
import { startFleet, startLoadgen, variantsOf } from './variants.ts';

const [what, arg] = process.argv.slice(2);
if (what === '--summarise' && arg) {
  for (const line of summariseProfile(JSON.parse(readFileSync(arg, 'utf8')) as Profile)) console.log(line);
  process.exit(0);
}
const seconds = Number(arg ?? 10);
const loadgen = await startLoadgen();
const fleet = await startFleet(undefined);
const variant = variantsOf(fleet).find((v) => v.key === what);
if (!variant) {
  console.error(`usage: node bench/http/profile.ts <raw|decide|decideLog|decide10k|poll304> [seconds]`);
  await fleet.stop();
  process.exit(2);
}
const server: Pinned<ServerCommands, unknown> =
  variant.key === 'raw' ? fleet.echo : variant.key === 'decide10k' ? fleet.large : variant.key === 'decideLog' ? fleet.logged : fleet.small;
const spec = { port: variant.port, requests: variant.requests, connections: 50, durationS: 3 };
await loadgen.call('saturate', spec);
await server.call('startProfile', null);
const result = await loadgen.call('saturate', { ...spec, durationS: seconds });
const file = join(tmpdir(), `acl-bench-${variant.key}-${Date.now()}.cpuprofile`);
await server.call('stopProfile', file);
await fleet.stop();
await loadgen.stop();
console.log(`${variant.label}: ${Math.round(result.rps)} req/s under the profiler (it slows the server down); profile ${file}`);
for (const line of summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as Profile)) console.log(line);
process.exit(0);
