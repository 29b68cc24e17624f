// The console's pages on a large tenant (make bench-console-large; docs/benchmarks.md, "The console"):
// bench/http's 10,000 generated rules, GET of the overview, the tenant page,
// a bundle carrying all of them and the connectors page, against the sign-in page (no data read: what a
// console page costs at all) measured in the same run. Server and client in this one process; medians.
//   node bench/console-large.ts                 10,000 rules, 21 GETs of each page
//   BENCH_QUICK=1 node bench/console-large.ts   1,000 rules, 5 GETs (a smoke check)
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { configFromFlags } from '../src/config.ts';
import { startService } from '../src/modes/index.ts';
import { signInAt } from '../test/support/console.ts';
import { LOCAL_LISTENERS } from '../test/support/service.ts';
import { median } from './http/rounds.ts';
import { BUNDLE, manifestFiles, TENANT, tenantRules } from './http/tenant.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const RULES = QUICK ? 1_000 : 10_000;
const GETS = QUICK ? 5 : 21;

const root = await mkdtemp(join(tmpdir(), 'acl-bench-console-'));
const manifests = join(root, 'manifests');
await mkdir(manifests);
for (const [file, text] of Object.entries(manifestFiles(tenantRules(RULES)))) await writeFile(join(manifests, file), text);
const config = configFromFlags(['--manifests', manifests, '--state-dir', join(root, 'state'), ...LOCAL_LISTENERS, '--log-level', 'silent']);
const service = await startService(config, { log: pino({ level: 'silent' }) });
try {
  const origin = new URL((service.console.url as string).replace('localhost', '127.0.0.1')).origin;
  const client = await signInAt(origin, (await readFile(service.console.adminKeyFile, 'utf8')).trim());
  const pages: [string, string][] = [
    ['sign-in page (baseline)', '/console/signin'],
    ['overview', '/console/'],
    ['tenant page', `/console/t/${TENANT}`],
    [`bundle carrying ${RULES.toLocaleString('en')} rules`, `/console/t/${TENANT}/bundles/${BUNDLE}`],
    ['connectors', `/console/t/${TENANT}/connectors`],
  ];
  console.log(
    `acl-operator console on ${RULES.toLocaleString('en')} rules, ${new Date().toISOString()}, Node ${process.version}; median of ${GETS} GETs`,
  );
  console.log('| page | bytes | median | × baseline |\n|---|---|---|---|');
  let baseline = NaN;
  for (const [label, path] of pages) {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < GETS; i++) {
      const start = performance.now();
      const r = await client.get(path);
      times.push(performance.now() - start);
      bytes = Buffer.byteLength(r.text);
      if (r.status !== 200) throw new Error(`${path} answered ${r.status}`);
    }
    const m = median(times);
    if (Number.isNaN(baseline)) baseline = m;
    console.log(`| ${label} | ${(bytes / 1024).toFixed(1)} KB | ${m.toFixed(1)} ms | ${(m / baseline).toFixed(1)} |`);
  }
} finally {
  await service.stop();
  await rm(root, { recursive: true, force: true });
}
