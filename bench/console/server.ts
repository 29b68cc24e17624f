// The service with its console, for bench/console.ts (started pinned on the server core): standalone on
// examples/ (the first page load) or on the generated tenant of bench/http (decisions, as bench/http.ts's
// `decide` variant: 10 rules, the folder re-read only when asked). Beside it, on the same process and
// core, two floors: raw node:http serving the console's own overview HTML, CSS and JS from memory, the
// bytes a browser would get with no rendering or session behind them; one with only their
// Content-Type, one with every header the console sent (its CSP, Cross-Origin-Opener-Policy...).
//   node bench/console/server.ts --manifests examples|bench
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { configFromFlags } from '../../src/config.ts';
import { startService } from '../../src/modes/index.ts';
import { LOCAL_LISTENERS } from '../../test/support/service.ts';
import { serveCommands } from '../http/ipc.ts';
import { processStats, type ServerStats } from '../http/servers/stats.ts';
import { CONNECTOR, manifestFiles, TENANT, tenantRules } from '../http/tenant.ts';

export interface ConsoleServerReady {
  /** The API listener's port (POST /authorization, the bundle endpoint). */
  readonly port: number;
  /** http://127.0.0.1:<port>/console/ */
  readonly consoleUrl: string;
  /** The admin key (a temporary state folder's), to sign in. */
  readonly adminKey: string;
  /** The tenant, connector and bundle to poll, and the connector's token. */
  readonly bundle: { readonly tenant: string; readonly connector: string; readonly name: string; readonly token: string };
  /** http://127.0.0.1:<port>/console/ of the floor, which serves the overview's bytes as they were at start. */
  readonly floorUrl: string;
  /** The same floor sending the console's response headers too (its CSP, COOP, no-store...). */
  readonly floorHeadersUrl: string;
}

export type ConsoleServerCommands = { stats: { arg: null; result: ServerStats } };

const { values } = parseArgs({ options: { manifests: { type: 'string', default: 'bench' } } });
const examples = values.manifests === 'examples';
if (!examples && values.manifests !== 'bench') throw new Error(`--manifests must be examples or bench, got ${values.manifests}`);

const root = await mkdtemp(join(tmpdir(), 'acl-bench-console-'));
const manifests = join(root, 'manifests');
if (examples) await cp(join(import.meta.dirname, '..', '..', 'examples'), manifests, { recursive: true });
else {
  await mkdir(manifests, { recursive: true });
  for (const [file, text] of Object.entries(manifestFiles(tenantRules(10)))) await writeFile(join(manifests, file), text);
}
const config = configFromFlags(['--manifests', manifests, '--state-dir', join(root, 'state'), ...LOCAL_LISTENERS, '--log-level', 'silent']);
// As bench/http's service: no folder re-read or activity flush during a run, so only the console differs.
const service = await startService(config, { log: pino({ level: 'silent' }), activityFlushMs: 3_600_000, debounceMs: 3_600_000 });
const consoleUrl = service.console.url?.replace('localhost', '127.0.0.1');
if (consoleUrl === undefined) throw new Error('the service started without a console');
const adminKey = (await readFile(service.console.adminKeyFile, 'utf8')).trim();
const bundle = examples
  ? { tenant: 'acme', connector: 'gateways', name: 'gateway-documents' }
  : { tenant: TENANT, connector: CONNECTOR, name: 'all' };
const token = (await readFile(service.state.tokenFile(bundle.tenant, bundle.connector), 'utf8')).trim();

interface Served {
  readonly body: Buffer;
  /** What the console sent with it, but for the connection's own headers (date, length, keep-alive). */
  readonly headers: Readonly<Record<string, string>>;
}
const CONNECTION_HEADERS = new Set(['date', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);

/** The overview and its two assets as the console serves them to the admin, path → body and headers. */
async function overviewBytes(): Promise<Map<string, Served>> {
  const origin = new URL(consoleUrl as string).origin;
  const signin = await fetch(`${origin}/console/signin`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: origin },
    body: new URLSearchParams({ key: adminKey }).toString(),
    redirect: 'manual',
  });
  const cookie = signin.headers.get('set-cookie')?.split(';')[0];
  if (cookie === undefined) throw new Error(`sign-in refused: ${signin.status}`);
  const files = new Map<string, Served>();
  const get = async (path: string): Promise<Buffer> => {
    const r = await fetch(`${origin}${path}`, { headers: { Cookie: cookie } });
    if (r.status !== 200) throw new Error(`${path} answered ${r.status}`);
    const body = Buffer.from(await r.arrayBuffer());
    files.set(path, { body, headers: Object.fromEntries([...r.headers].filter(([name]) => !CONNECTION_HEADERS.has(name))) });
    return body;
  };
  const html = (await get('/console/')).toString('utf8');
  for (const [, path] of html.matchAll(/(?:href|src)="(\/console\/assets\/[^"]+)"/g)) await get(path as string);
  if (files.size !== 3) throw new Error(`the overview links ${files.size - 1} assets, not a stylesheet and a script`);
  return files;
}

const files = await overviewBytes();
/** The floor: the files from memory, with only their Content-Type, or with every header the console sent. */
async function startFloor(allHeaders: boolean): Promise<{ url: string; close(): void }> {
  const floor = createServer((req, res) => {
    const file = files.get(req.url ?? '');
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    const headers = allHeaders ? file.headers : { 'content-type': file.headers['content-type'] ?? 'application/octet-stream' };
    res.writeHead(200, { ...headers, 'Content-Length': file.body.length }).end(file.body);
  });
  await new Promise<void>((resolve) => floor.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(floor.address() as AddressInfo).port}/console/`, close: () => floor.close() };
}
const floor = await startFloor(false);
const floorHeaders = await startFloor(true);

const ready: ConsoleServerReady = {
  port: Number(new URL(service.apiUrl).port),
  consoleUrl,
  adminKey,
  bundle: { ...bundle, token },
  floorUrl: floor.url,
  floorHeadersUrl: floorHeaders.url,
};

serveCommands<ConsoleServerCommands>({ stats: () => processStats(service.longPolls.size()) }, ready, async () => {
  floor.close();
  floorHeaders.close();
  await service.stop();
  await rm(root, { recursive: true, force: true });
});
