// Signed bundles (issue 27): what signing costs a bundle build and the 304 path, each against
// unsigned measured in the same run, the variants interleaved round by round so drift hits them
// alike. Ratios are the figures to quote (a loaded machine moves the absolute numbers). Not a test.
//   node bench/signing.ts                 5 rounds (about 2 minutes)
//   BENCH_QUICK=1 node bench/signing.ts   2 short rounds: a smoke check, not figures to quote
import autocannon from 'autocannon';
import { buildBundle, type BundleInput } from '../src/bundle/index.ts';
import { bundleSource } from '../src/bundle/bundle.ts';
import { bundleSignatures } from '../src/bundle/sign.ts';
import type { SigningState } from '../src/controller/index.ts';
import { generateSigningKeyPem, readSigningKey, type KeyRing } from '../src/signing/index.ts';
import { NS, RULE_SPEC, sourceObject } from '../test/support/controller.ts';
import { ruleModelFor } from '../test/support/rules.ts';
import { startSignedService, type SignedService } from '../test/support/signed-service.ts';
import { machine, table } from './http/report.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const ROUNDS = QUICK ? 2 : 5;
/** The 304 runs are shorter and more: each round's ratio to unsigned in that round is what counts. */
const ROUNDS_304 = QUICK ? 2 : 9;
const BUILDS = QUICK ? 20 : 60;
const RUN_S = QUICK ? 1 : 2;
const CONNECTIONS = 20;

const f2 = (x: number): string => x.toFixed(2);
const f3 = (x: number): string => x.toFixed(3);
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2;
};

// The size acl-operator generates (RSA 3072): what a real rotation signs with.
const A = readSigningKey(generateSigningKeyPem());
const B = readSigningKey(generateSigningKeyPem());
const RINGS: readonly { name: string; ring: KeyRing | undefined }[] = [
  { name: 'unsigned', ring: undefined },
  { name: 'signed', ring: { current: A } },
  { name: 'rotating (2 archives)', ring: { current: B, previous: A } },
];

console.log(`acl-operator signing benchmark, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check)' : ''}`);
console.log(`machine: ${machine()}; RSA ${A.bits}-bit keys`);

// One signature alone.
{
  const manifest = '{"revision":"1","roots":["acl"]}\n';
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    bundleSignatures(manifest, 'a'.repeat(64), A);
    times.push(performance.now() - t0);
  }
  console.log(`\n.signatures.json alone (hash of .manifest + one RS256 signature): median ${f3(median(times))} ms`);
}

// Builds: a new revision each time (the manifest changes, policy.rego's pieces come from the cache,
// as when one rule of many changed), translated once beforehand: signing's share of a build.
console.log(`\nBundle build (buildBundle, in-thread packer), median of ${BUILDS} builds per round, ${ROUNDS} rounds`);
const sizes: readonly { name: string; input: BundleInput }[] = [10, 2000].map((n) => ({
  name: `${n} rules`,
  input: {
    tenant: 'bench',
    name: 'b',
    connector: 'c',
    regoVersion: 0,
    rules: Array.from({ length: n }, (_, i) =>
      ruleModelFor(`rule-${i}`, { resourceType: `type${i % 50}`, condition: `principal.team == "t${i}"` }),
    ),
  },
}));
const buildRows: string[][] = [];
for (const size of sizes) {
  const source = bundleSource(size.input);
  const samples = new Map(RINGS.map((r) => [r.name, [] as number[]]));
  let revision = 1;
  for (let round = 0; round < ROUNDS; round++) {
    const order = [...RINGS.slice(round % RINGS.length), ...RINGS.slice(0, round % RINGS.length)];
    for (const { name, ring } of order) {
      const times: number[] = [];
      for (let i = 0; i < BUILDS; i++) {
        const t0 = performance.now();
        await buildBundle(size.input, revision++, { source, ring });
        times.push(performance.now() - t0);
      }
      samples.get(name)?.push(median(times));
    }
  }
  const base = median(samples.get('unsigned') ?? []);
  for (const { name } of RINGS) {
    const ms = median(samples.get(name) ?? []);
    buildRows.push([size.name, name, f3(ms), `${f2(ms / base)}x`]);
  }
  buildRows.push([size.name, '(policy.rego bytes)', String(Buffer.byteLength(source.rego)), '']);
}
for (const line of table(['bundle', 'variant', 'ms per build', 'vs unsigned'], buildRows)) console.log(line);

// The 304 path: the real API handler (store, long polls, metrics) over loopback, If-None-Match of
// the archive each variant is served, no long poll. The load comes from an autocannon worker thread,
// so this thread only serves: its busy time (event loop utilisation) per 304 is the server's cost.
console.log(
  `\n304 path (GET .../bundles/b with If-None-Match), autocannon in a worker thread, ${CONNECTIONS} connections, ${RUN_S} s per variant per round, ${ROUNDS_304} rounds`,
);
const objects = () => [
  sourceObject('Connector', 'gateways', {}),
  sourceObject('Bundle', 'docs', { connector: 'gateways' }),
  sourceObject('Rule', 'team', RULE_SPEC),
];
const start = async (state: SigningState): Promise<SignedService> => {
  const s = await startSignedService(objects(), state);
  await s.drain();
  return s;
};
const unsigned = await start({ unsigned: true });
const rotating = await start({ unsigned: false, ring: { current: B, previous: A }, problem: undefined });
const builtOf = (s: SignedService) => s.store.snapshot().tenants.get(NS)?.bundles.get('docs')?.built;
const path = `/${NS}/connectors/policyagent/gateways/bundles/docs`;
const variants = [
  { name: 'unsigned, no ?key=', s: unsigned, query: '', etag: builtOf(unsigned)?.etag },
  { name: 'signed, ?key=<current>', s: rotating, query: `?key=${B.kid}`, etag: builtOf(rotating)?.etag },
  { name: 'signed, ?key=<previous>', s: rotating, query: `?key=${A.kid}`, etag: builtOf(rotating)?.previous?.etag },
  { name: 'signed, no ?key=', s: rotating, query: '', etag: builtOf(rotating)?.etag },
];
const rps = new Map(variants.map((v) => [v.name, [] as number[]]));
const busyUs = new Map(variants.map((v) => [v.name, [] as number[]]));
const load = (v: (typeof variants)[number], durationS: number) =>
  autocannon({
    url: v.s.url,
    workers: 1,
    connections: CONNECTIONS,
    duration: durationS,
    pipelining: 1,
    requests: [
      {
        method: 'GET',
        path: `${path}${v.query}`,
        headers: { Authorization: `Bearer ${v.s.token(NS, 'gateways')}`, 'If-None-Match': v.etag ?? '' },
      },
    ],
  });
// Warm-up: every path compiled before anything counts.
for (const v of variants) await load(v, 1);
for (let round = 0; round < ROUNDS_304; round++) {
  const order = [...variants.slice(round % variants.length), ...variants.slice(0, round % variants.length)];
  for (const v of order) {
    const elu0 = performance.eventLoopUtilization();
    const result = await load(v, RUN_S);
    const count = result.statusCodeStats['304']?.count ?? 0;
    if (count === 0 || Object.keys(result.statusCodeStats).some((c) => c !== '304'))
      throw new Error(`${v.name}: ${JSON.stringify(result.statusCodeStats)}`);
    rps.get(v.name)?.push(count / result.duration);
    busyUs.get(v.name)?.push((performance.eventLoopUtilization(elu0).active * 1000) / count);
  }
}
await unsigned.stop();
await rotating.stop();
/** The median over the rounds of a variant's figure over unsigned's in the same round (paired: drift cancels). */
const pairedRatio = (m: Map<string, number[]>, name: string, invert = false): number => {
  const base = m.get(variants[0]?.name ?? '') ?? [];
  return median((m.get(name) ?? []).map((x, i) => (invert ? (base[i] as number) / x : x / (base[i] as number))));
};
const rows304 = variants.map((v) => [
  v.name,
  String(Math.round(median(rps.get(v.name) ?? []))),
  `${f2(pairedRatio(rps, v.name, true))}x`,
  f2(median(busyUs.get(v.name) ?? [])),
  `${f2(pairedRatio(busyUs, v.name))}x`,
]);
for (const line of table(['variant', '304/s', 'vs unsigned', 'server µs per 304', 'vs unsigned'], rows304)) console.log(line);
console.log(
  '\nmedians over the rounds; "vs unsigned": the median of each round\'s variant cost over unsigned in that round (target on the 304 path: at most 1.05x)',
);
