// What the console costs (make bench-console; docs/benchmarks.md, "The console"), in Debian's chromium
// driven by playwright-core (or $CHROMIUM). Not a test: a missed target prints MISS and the exit code stays 0.
//  1. First page load over localhost: the overview of examples/ as the admin, a fresh browser context
//     (empty cache) each time: bytes of HTML + CSS + JS and the time to the end of the load event
//     (Navigation Timing), against floors in the same run: raw node:http serving the very same bytes
//     from memory on the same core, with only their Content-Type and with every header the console
//     sent (its CSP, Cross-Origin-Opener-Policy...). Median of N, the three in rotating order.
//  2. Decisions while the console is open: POST /authorization as bench/http.ts's `decide` variant (10
//     rules, 50 connections, our load generator), the console closed (the pages on about:blank) against
//     a browser page open on the tenant page with live updates flowing, signed in as the admin (every
//     tenant's changes) or with the tenant's API key (its own, summed over its bundles): the bundle is
//     polled every 100 ms during every run of each, so its activity moves and the open page is told once
//     a second and fetches itself again. Same server process for all, rounds rotated as in bench/http.
// The service runs on core 0; the load generator, the browser and this process on core 1.
//   node bench/console.ts                   21 loads, 5 rounds × 5 s (about 2 minutes)
//   BENCH_QUICK=1 node bench/console.ts     5 loads, 2 rounds × 2 s (a smoke check)
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { CHROMIUM, launchBrowser } from '../test/support/browser.ts';
import { firstLoad, type PageLoad } from './console/pageload.ts';
import type { ConsoleServerCommands, ConsoleServerReady } from './console/server.ts';
import { pinToLoadCore, SERVER_CORE } from './http/cores.ts';
import { spawnPinned } from './http/ipc.ts';
import { fmt, kb, machine, table, targetLines } from './http/report.ts';
import { measureRounds, median, ratio, summarise, unexpected, type Sample, type Variant } from './http/rounds.ts';
import { API_KEY, decisionBodies, tenantRules } from './http/tenant.ts';
import { decisionRequest, startLoadgen } from './http/variants.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const LOADS = QUICK ? 5 : 21;
const ROUNDS = QUICK ? 2 : 5;
const RUN_S = QUICK ? 2 : 5;
const CONNECTIONS = 50;
/** bench/http.ts's decide variant: distinct bodies, so the run is not one cached request. */
const BODIES = 2_000;
const POLL_MS = 100;
/** The bar: decisions with the console open at least this share of those with it closed. */
const TARGET = 0.95;

console.log(
  `acl-operator console benchmark, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check, not figures to quote)' : ''}`,
);
console.log(`machine: ${machine()}`);
pinToLoadCore('the service, and the load generator with the browser,');
if (!CHROMIUM) {
  console.log("skipped: no chromium (install Debian's chromium, /usr/bin/chromium, or set CHROMIUM=<path>)");
  process.exit(0);
}
const server = fileURLToPath(new URL('./console/server.ts', import.meta.url));
const start = (manifests: 'examples' | 'bench') =>
  spawnPinned<ConsoleServerCommands, ConsoleServerReady>(SERVER_CORE, server, ['--manifests', manifests]);
// Started from this process, the browser inherits its core (1): it never takes the server's.
const browser = await launchBrowser();
console.log(`browser: ${CHROMIUM} ${browser.version()}`);

/** The session cookie of a sign-in with `key`. */
async function sessionCookie(consoleUrl: string, key: string): Promise<{ name: string; value: string }> {
  const origin = new URL(consoleUrl).origin;
  const r = await fetch(`${origin}/console/signin`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: origin },
    body: new URLSearchParams({ key }).toString(),
    redirect: 'manual',
  });
  const pair = r.headers.get('set-cookie')?.split(';')[0];
  const eq = pair?.indexOf('=') ?? -1;
  if (r.status !== 303 || pair === undefined || eq < 0) throw new Error(`sign-in refused: ${r.status}`);
  return { name: pair.slice(0, eq), value: pair.slice(eq + 1) };
}

// --- 1. First page load -------------------------------------------------------------------------
const examples = await start('examples');
const cookie = await sessionCookie(examples.ready.consoleUrl, examples.ready.adminKey);
const PAGES = ['console', 'floorHeaders', 'floor'] as const;
type Which = (typeof PAGES)[number];
const LABELS: Record<Which, string> = {
  console: 'console (the service)',
  floorHeaders: "floor: the same bytes and the console's headers",
  floor: 'floor: the same bytes, Content-Type only',
};
const loads: Record<Which, PageLoad[]> = { console: [], floorHeaders: [], floor: [] };
const loadOnce = async (which: Which): Promise<PageLoad> =>
  which === 'console'
    ? firstLoad(browser, examples.ready.consoleUrl, cookie)
    : firstLoad(browser, which === 'floor' ? examples.ready.floorUrl : examples.ready.floorHeadersUrl, undefined);
process.stderr.write('first page loads: warming up\n');
for (let i = 0; i < 3; i++) for (const w of PAGES) await loadOnce(w);
for (let i = 0; i < LOADS; i++) {
  // The order rotates, so a slow moment of the machine hits each page alike.
  for (let j = 0; j < PAGES.length; j++) {
    const w = PAGES[(i + j) % PAGES.length] as Which;
    loads[w].push(await loadOnce(w));
  }
}
await examples.stop();

const med = (xs: readonly PageLoad[], f: (p: PageLoad) => number): number => median(xs.map(f));
const bodyBytes = (p: PageLoad): number => p.htmlBytes + p.cssBytes + p.jsBytes;
console.log('');
console.log(`First page load: the overview of examples/ as the admin, a fresh context each, median of ${LOADS}`);
for (const line of table(
  ['page', 'HTML', 'CSS', 'JS', 'HTML+CSS+JS', 'with headers', 'first byte', 'load', '× floor'],
  PAGES.map((w) => [
    LABELS[w],
    kb(med(loads[w], (p) => p.htmlBytes)),
    kb(med(loads[w], (p) => p.cssBytes)),
    kb(med(loads[w], (p) => p.jsBytes)),
    kb(med(loads[w], bodyBytes)),
    kb(med(loads[w], (p) => p.transferBytes)),
    `${fmt(
      med(loads[w], (p) => p.ttfbMs),
      1,
    )} ms`,
    `${fmt(
      med(loads[w], (p) => p.loadMs),
      1,
    )} ms`,
    w === 'floor' ? '1.00' : fmt(median(loads[w].map((c, i) => c.loadMs / (loads.floor[i] as PageLoad).loadMs)), 2),
  ]),
))
  console.log(`  ${line}`);

// --- 2. Decisions with the console open ------------------------------------------------------------
const svc = await start('bench');
const loadgen = await startLoadgen();
type Viewer = 'admin' | 'tenant';
let refreshes = 0;
/** A browser page signed in as the admin, or with the tenant's API key, each in a context of its own. */
async function viewerPage(key: string): Promise<{ context: Awaited<ReturnType<typeof browser.newContext>>; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const cookie = await sessionCookie(svc.ready.consoleUrl, key);
  await context.addCookies([{ ...cookie, domain: '127.0.0.1', path: '/console', httpOnly: true, sameSite: 'Strict' }]);
  const page = await context.newPage();
  page.on('request', (r) => {
    if (r.headers()['x-console-live'] !== undefined) refreshes++;
  });
  return { context, page };
}
const viewers: Record<Viewer, { context: Awaited<ReturnType<typeof browser.newContext>>; page: Page }> = {
  admin: await viewerPage(svc.ready.adminKey),
  tenant: await viewerPage(API_KEY),
};
const tenantUrl = new URL(`t/${svc.ready.bundle.tenant}`, svc.ready.consoleUrl).toString();

/** Opens the tenant page for `open` (and waits for its live stream) and leaves every other page on about:blank (its stream closes). */
async function consoleOpen(open: Viewer | undefined): Promise<void> {
  for (const [viewer, { page }] of Object.entries(viewers)) {
    const wanted = viewer === open;
    if (wanted === (page.url() === tenantUrl)) continue;
    if (!wanted) {
      await page.goto('about:blank');
      continue;
    }
    const res = await page.goto(tenantUrl);
    if (res?.status() !== 200) throw new Error(`${tenantUrl} answered ${res?.status()}`);
    await page.getByText('Live', { exact: true }).waitFor({ timeout: 10_000 });
  }
}

/** Polls the bundle every POLL_MS until stopped: its sync activity moves, so live updates flow. */
function startPolling(): () => Promise<number> {
  const { tenant, connector, name, token } = svc.ready.bundle;
  const url = `http://127.0.0.1:${svc.ready.port}/${tenant}/connectors/policyagent/${connector}/bundles/${name}`;
  let stopped = false;
  let polls = 0;
  const loop = (async () => {
    while (!stopped) {
      const r = await fetch(url, { headers: { Authorization: `Bearer ${token}`, 'User-Agent': 'Open Policy Agent/1.1.0 (linux, amd64)' } });
      if (r.status !== 200) throw new Error(`the bundle answered ${r.status}`);
      await r.arrayBuffer();
      polls++;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return polls;
  };
}

const requests = decisionBodies(tenantRules(10), BODIES, 1).map(decisionRequest);
const cpuUs = async (): Promise<number> => (await svc.call('stats', null)).cpuUs;
const base = { port: svc.ready.port, pid: svc.pid, requests, expect: 200, cpuUs };
const variants: Variant[] = [
  { key: 'closed', label: 'console closed', ...base },
  { key: 'open', label: 'tenant page open, live', ...base },
  { key: 'tenant', label: "…as the tenant's key", ...base },
];
let lastRun = { refreshes: 0, polls: 0 };
const runOnce = async (v: Variant, durationS: number) => {
  await consoleOpen(v.key === 'open' ? 'admin' : v.key === 'tenant' ? 'tenant' : undefined);
  const before = refreshes;
  const stop = startPolling();
  const result = await loadgen.call('saturate', { port: v.port, requests: v.requests, connections: CONNECTIONS, durationS });
  lastRun = { polls: await stop(), refreshes: refreshes - before };
  return result;
};
process.stderr.write('decisions: warming up\n');
for (const v of variants) await runOnce(v, QUICK ? 1 : 3);
const live: Record<string, number[]> = { open: [], tenant: [] };
const samples = await measureRounds(variants, ROUNDS, RUN_S, 1, runOnce, (v, round, s) => {
  live[v.key]?.push(lastRun.refreshes);
  process.stderr.write(
    `  round ${round + 1}/${ROUNDS}  ${v.label.padEnd(24)} ${fmt(s.result.rps).padStart(7)} req/s  ${fmt(s.cpuUsPerResponse, 1)} µs CPU/req  ${lastRun.polls} polls, ${lastRun.refreshes} live refreshes\n`,
  );
  const wrong = unexpected(v, s);
  if (wrong) console.log(`WARNING ${wrong}`);
});
for (const { context } of Object.values(viewers)) await context.close();
await browser.close();
await Promise.all([svc.stop(), loadgen.stop()]);

const of = (key: string): Sample[] => samples.get(key) as Sample[];
const vsClosed = (key: string): number => ratio(of(key), of('closed'), (s) => s.result.rps);
const addedUs = (key: string): number => median(of(key).map((s, i) => s.cpuUsPerResponse - (of('closed')[i] as Sample).cpuUsPerResponse));
console.log('');
console.log(
  `POST /authorization, 10 rules, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${RUN_S} s, the bundle polled every ${POLL_MS} ms in each (medians; the ratio is the median of per-round ratios)`,
);
for (const line of table(
  ['variant', 'req/s', 'p99 ms', '× closed', 'server CPU/req', 'added CPU/req', 'other load, load core'],
  variants.map((v) => {
    const s = summarise(of(v.key));
    return [
      v.label,
      fmt(s.rps),
      fmt(s.p99Ms, 2),
      v.key === 'closed' ? '1.00' : fmt(vsClosed(v.key), 2),
      `${fmt(s.cpuUsPerResponse, 1)} µs`,
      v.key === 'closed' ? '' : `${fmt(addedUs(v.key), 2)} µs`,
      `${fmt(100 * s.otherLoadCore, 0)} %`,
    ];
  }),
))
  console.log(`  ${line}`);
console.log(
  `  live refreshes of the open page per ${RUN_S} s run: admin ${live['open']?.join(', ')}; tenant key ${live['tenant']?.join(', ')}`,
);
console.log('');
for (const line of targetLines(
  (['open', 'tenant'] as const).map((key) => ({
    what: `decisions req/s with the console open and live${key === 'tenant' ? " as the tenant's key" : ''}, × closed`,
    measured: fmt(vsClosed(key), 3),
    target: `≥ ${TARGET}`,
    met: vsClosed(key) >= TARGET,
  })),
))
  console.log(line);
process.exit(0);
