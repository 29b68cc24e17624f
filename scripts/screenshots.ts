// The console's screenshots for README.md and docs/console.md (make screenshots): the standalone service
// on a temporary copy of examples/, a little activity so the tables are not empty (bundle polls with
// OPA's user agent, status reports of three OPAs, then a rule edit that two of them catch up with, and
// decision logs), then
// each page in Debian's chromium as the admin, at 1280×800 and on a phone (390×844), written to
// docs/console/<page>.png and docs/console/<page>-phone.png. A page whose route answers 404 (not built
// yet) is skipped with a line saying so.
//   node scripts/screenshots.ts [--out docs/console]     (OPA_BIN=<opa>: the playground also asks that OPA)
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { pino } from 'pino';
import { configFromFlags } from '../src/config.ts';
import { type Service, startService } from '../src/modes/index.ts';
import { CHROMIUM, launchBrowser, signInWith } from '../test/support/browser.ts';
import { decisionEvent, statusReport } from '../test/support/reports.ts';

const ROOT = join(import.meta.dirname, '..');
const { values } = parseArgs({ options: { out: { type: 'string', default: join(ROOT, 'docs', 'console') } } });
const OUT = values.out;
const TENANT = 'acme';
const CONNECTOR = 'gateways';
const BUNDLE = 'gateway-documents';
const OPA_AGENT = 'Open Policy Agent/1.1.0 (linux, amd64)';

interface Shot {
  readonly name: string;
  /** Under /console/. */
  readonly path: string;
  /** What to do on the page before the picture (a tab, a form); a string says why it was skipped. */
  readonly prepare?: (page: Page) => Promise<string | undefined>;
}

/** Clicks the first link or button named `name`; says so when the page has none. */
async function clickIfThere(page: Page, name: RegExp, what: string): Promise<string | undefined> {
  const target = page.getByRole('link', { name }).or(page.getByRole('button', { name })).or(page.getByRole('tab', { name })).first();
  if ((await target.count()) === 0) return `the page has no ${what} yet`;
  await target.click();
  await page.waitForLoadState('load');
  return undefined;
}

/** A request team-documents allows: alice of team blue reads a document of team blue. */
const ALLOWED = {
  subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
  action: 'read',
  resource: { type: 'document', id: 'design-notes', properties: { team: 'blue' } },
  context: {},
};

/** The playground: a request typed into its form, decided, and the decision scrolled into view. */
async function playground(page: Page): Promise<string | undefined> {
  const missing = await clickIfThere(page, /playground/i, 'playground');
  if (missing) return missing;
  const request = page.getByRole('textbox', { name: /request/i }).first();
  if ((await request.count()) === 0) return 'the playground has no request field yet';
  await request.fill(JSON.stringify(ALLOWED, null, 2));
  const decide = page.getByRole('button', { name: /^decide$/i }).first();
  if ((await decide.count()) === 0) return 'the playground has no Decide button yet';
  await decide.click();
  await page.waitForLoadState('load');
  return scrollToHeading(page, /^Decision/);
}

/** Scrolls the section headed `heading` (an h2, or any heading with a RegExp) to the top of the window. */
async function scrollToHeading(page: Page, heading: string | RegExp): Promise<string | undefined> {
  const h = page.getByRole('heading', typeof heading === 'string' ? { level: 2, name: heading } : { name: heading }).first();
  if ((await h.count()) === 0) return `the page has no section ${heading} yet`;
  const box = await h.boundingBox();
  if (box === null) return `the section ${heading} is not shown`;
  await page.evaluate(`window.scrollTo(0, window.scrollY + ${Math.floor(box.y)} - 12)`);
  return undefined;
}

const scrollTo =
  (heading: string) =>
  (page: Page): Promise<string | undefined> =>
    scrollToHeading(page, heading);

const SHOTS: readonly Shot[] = [
  { name: 'overview', path: '' },
  { name: 'tenant', path: `t/${TENANT}` },
  { name: 'connectors', path: `t/${TENANT}/connectors` },
  { name: 'bundle', path: `t/${TENANT}/bundles/${BUNDLE}` },
  { name: 'bundle-activity', path: `t/${TENANT}/bundles/${BUNDLE}`, prepare: scrollTo('Sync activity') },
  { name: 'bundle-agents', path: `t/${TENANT}/bundles/${BUNDLE}`, prepare: scrollTo('Agents') },
  {
    name: 'rule-translation',
    path: `t/${TENANT}/rules/team-documents`,
    prepare: (p) => clickIfThere(p, /translation/i, 'Translations tab'),
  },
  { name: 'rule-playground', path: `t/${TENANT}/rules/team-documents`, prepare: playground },
  { name: 'directory', path: 't/records/directory' },
];

const VIEWPORTS = [
  { suffix: '', viewport: { width: 1280, height: 800 } },
  { suffix: '-phone', viewport: { width: 390, height: 844 } },
] as const;

/** A revision edit the folder watcher would pick up: a rule's description reworded (a new bundle revision). */
async function editRule(service: Service, manifests: string): Promise<void> {
  const file = join(manifests, 'acme-rules.yaml');
  const text = await readFile(file, 'utf8');
  const from = "Members of a team may read and edit their team's documents.";
  if (!text.includes(from)) throw new Error(`examples/acme-rules.yaml no longer says "${from}": update scripts/screenshots.ts`);
  await writeFile(file, text.replace(from, 'Members of a team may read and edit the documents of their team.'));
  await service.source.rescan();
  await service.controller.idle();
}

/** Waits until Bundle status shows `rollout` (agents current / reporting); the refresh follows a report at once here. */
async function agentsShown(service: Service, rollout: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    await service.controller.idle();
    const status = service.state.object('Bundle', TENANT, BUNDLE)?.status as { agents?: { rollout?: string } } | undefined;
    if (status?.agents?.rollout === rollout) return;
    if (Date.now() > deadline) throw new Error(`Bundle ${TENANT}/${BUNDLE} shows agents ${status?.agents?.rollout}, not ${rollout}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Sync activity, agents and decisions: three OPAs poll both bundles and report revision r; then a
 * rule edit makes r+1, which two of them fetch and report, so one rollout is in progress.
 */
async function activity(service: Service, manifests: string): Promise<void> {
  const api = service.apiUrl.replace('localhost', '127.0.0.1');
  const base = `${api}/${TENANT}/connectors/policyagent/${CONNECTOR}`;
  const token = (await readFile(service.state.tokenFile(TENANT, CONNECTOR), 'utf8')).trim();
  const auth = { Authorization: `Bearer ${token}` };
  const revision = (): string => {
    const bundle = service.store.snapshot().tenants.get(TENANT)?.bundles.get(BUNDLE);
    if (!bundle) throw new Error(`examples/ serves no bundle ${TENANT}/${BUNDLE}`);
    return String(bundle.built.revision);
  };
  const poll = async (agents: readonly string[]): Promise<void> => {
    for (const name of [BUNDLE, 'gateway-all-v1']) {
      for (const agent of agents) {
        const r = await fetch(`${base}/bundles/${name}`, { headers: { ...auth, 'User-Agent': `${OPA_AGENT} ${agent}` } });
        await r.arrayBuffer();
      }
    }
  };
  const report = async (agents: readonly string[], rev: string): Promise<void> => {
    for (const id of agents) {
      const r = await fetch(`${base}/status`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json', 'User-Agent': OPA_AGENT },
        body: JSON.stringify(statusReport(id, { [BUNDLE]: { revision: rev } })),
      });
      if (r.status >= 300) throw new Error(`a status report was refused: ${r.status} ${await r.text()}`);
    }
  };
  const all = ['gateway-eu-1', 'gateway-eu-2', 'gateway-us-1'];
  await poll(all);
  await report(all, revision());
  await editRule(service, manifests);
  await poll(all.slice(0, 2));
  await report(all.slice(0, 2), revision());
  await agentsShown(service, '2/3');
  const events = Array.from({ length: 8 }, (_, i) =>
    decisionEvent(
      i,
      { labels: { id: 'gateway-eu-1', version: '1.1.0' }, timestamp: new Date(Date.now() - (8 - i) * 1000).toISOString() },
      BUNDLE,
      revision(),
    ),
  );
  const logs = await fetch(`${base}/logs`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'User-Agent': OPA_AGENT },
    body: gzipSync(JSON.stringify(events)),
  });
  if (logs.status >= 300) throw new Error(`the decision logs were refused: ${logs.status} ${await logs.text()}`);
  await service.flushActivity();
}

if (!CHROMIUM) {
  console.error("make screenshots needs a chromium: install Debian's chromium (/usr/bin/chromium) or set CHROMIUM=<path>");
  process.exit(2);
}
const root = await mkdtemp(join(tmpdir(), 'acl-screenshots-'));
const manifests = join(root, 'manifests');
await cp(join(ROOT, 'examples'), manifests, { recursive: true });
const config = configFromFlags([
  ...['--manifests', manifests, '--state-dir', join(root, 'state'), '--insecure-http'],
  ...['--listen', '127.0.0.1:0', '--ops-listen', '127.0.0.1:0', '--console-listen', '127.0.0.1:0', '--log-level', 'silent'],
  // With a real OPA the playground also shows each bundle's Rego deciding the request.
  ...(process.env['OPA_BIN'] ? ['--opa', process.env['OPA_BIN']] : []),
]);
// Bundle status shows each agent report at once (not once per 5 s), and the rule edit applies at the
// rescan that follows it (no settle delay), so the pictures show what was just done.
const service = await startService(config, { log: pino({ level: 'silent' }), agentStatusIntervalMs: 0, settleMs: 0 });
const browser = await launchBrowser();
try {
  const consoleUrl = service.console.url?.replace('localhost', '127.0.0.1');
  if (consoleUrl === undefined) throw new Error('the service started without a console');
  await activity(service, manifests);
  const key = (await readFile(service.console.adminKeyFile, 'utf8')).trim();
  await mkdir(OUT, { recursive: true });
  const written: string[] = [];
  for (const { suffix, viewport } of VIEWPORTS) {
    const context = await browser.newContext({ viewport, colorScheme: 'light' });
    const page = await context.newPage();
    await page.goto(new URL('signin', consoleUrl).toString());
    const signin = join(OUT, `signin${suffix}.png`);
    await page.screenshot({ path: signin });
    written.push(signin);
    await signInWith(page, consoleUrl, key);
    for (const shot of SHOTS) {
      const res = await page.goto(new URL(shot.path, consoleUrl).toString());
      if (res?.status() === 404) {
        console.log(`skipped ${shot.name}${suffix}: /console/${shot.path} answers 404 (the page is not built yet)`);
        continue;
      }
      const why = await shot.prepare?.(page);
      if (why !== undefined) {
        console.log(`skipped ${shot.name}${suffix}: ${why}`);
        continue;
      }
      const file = join(OUT, `${shot.name}${suffix}.png`);
      await page.screenshot({ path: file });
      written.push(file);
    }
    await context.close();
  }
  console.log(`wrote ${written.length} screenshots:\n${written.map((f) => `  ${f.replace(`${ROOT}/`, '')}`).join('\n')}`);
} finally {
  await browser.close();
  await service.stop();
  await rm(root, { recursive: true, force: true });
}
