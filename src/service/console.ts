// The console's wiring, alike in both modes (docs/console.md): its own plain-HTTP listener (loopback by
// default: port-forward in a cluster), what it reads, the editor its actions write through, its admin
// keys, and the signal its live updates follow, per tenant. Each mode hands in what only it knows.
import { randomBytes } from 'node:crypto';
import { type ConsoleDeps, createConsoleApp, type Mode } from '../console/index.ts';
import type { ClusterWriter, ObjectEditor, ObjectReader, TokenSecret } from '../controller/index.ts';
import { hashToken } from '../auth/index.ts';
import type { RecentDecisions } from '../fleet/index.ts';
import { bundleKey, type Store } from '../store/index.ts';
import { type Opa, openOpa } from '../policytest/index.ts';
import type { Config } from '../config.ts';
import type { Core } from './core.ts';
import type { Fleet } from './fleet.ts';
import { listenOps } from './listeners.ts';

export interface ConsoleSource {
  readonly mode: Mode;
  readonly objects: ObjectReader;
  readonly editor: ObjectEditor;
  readTokenSecret(namespace: string, connector: string): TokenSecret | undefined;
  adminKeyHashes(): Promise<ReadonlySet<string>>;
}

export interface ConsoleServing {
  /** The console's URL; undefined when --console-listen is off. */
  readonly url: string | undefined;
  close(): Promise<void>;
}

/**
 * What the console's live updates follow, counted per tenant so that a tenant's pages hear only of their
 * own (docs/console.md, "Pages"): publishes that changed it, its status and token Secret writes, its
 * agents' reports. Bundle polls and OPA's decisions are counted where they are kept, per bundle.
 */
export interface Changes {
  /** Something of `tenant` changed. */
  note(tenant: string): void;
  /** The changes of `tenant` so far; of every tenant when undefined. */
  count(tenant?: string): number;
}

export function createChanges(): Changes {
  const perTenant = new Map<string, number>();
  let all = 0;
  return {
    note(tenant) {
      all++;
      perTenant.set(tenant, (perTenant.get(tenant) ?? 0) + 1);
    },
    count: (tenant) => (tenant === undefined ? all : (perTenant.get(tenant) ?? 0)),
  };
}

/**
 * A number that moves whenever something a page of `tenant` shows may have changed (undefined: any
 * tenant's, what the admin sees). Read once a second per open stream, never on a request's path: a
 * tenant's sums its bundles' polls and decisions, which the bundle route and the log receiver count
 * with one increment each.
 */
export function liveVersion(changes: Changes, store: Store, recent: RecentDecisions): (tenant: string | undefined) => string {
  return (tenant) => {
    if (tenant === undefined) return `${changes.count()}.${store.activity.count()}.${recent.count()}`;
    let polls = 0;
    let decisions = 0;
    for (const bundle of store.snapshot().tenants.get(tenant)?.bundles.keys() ?? []) {
      const key = bundleKey(tenant, bundle);
      polls += store.activity.countOf(key);
      decisions += recent.countOf(key);
    }
    return `${changes.count(tenant)}.${polls}.${decisions}`;
  };
}

/** Counts status and token Secret writes per tenant, so live updates follow them too (a phase can change without a publish). */
export function countingWriter(writer: ClusterWriter, onWrite: (tenant: string) => void): ClusterWriter {
  return {
    readTokenSecret: (ns, name) => writer.readTokenSecret(ns, name),
    writeTokenSecret: async (owner, secret) => {
      await writer.writeTokenSecret(owner, secret);
      onWrite(owner.metadata.namespace);
    },
    deleteTokenSecret: (ns, name) => writer.deleteTokenSecret(ns, name),
    writeStatus: async (key, status) => {
      await writer.writeStatus(key, status);
      onWrite(key.namespace);
    },
    ...(writer.recordEvent ? { recordEvent: writer.recordEvent.bind(writer) } : {}),
  };
}

/** The playground's OPA (--opa), checked before anything starts: one that does not run stops the start. */
export async function consoleOpa(config: Pick<Config, 'opa' | 'consoleListen'>): Promise<Opa | undefined> {
  if (config.opa === undefined || config.consoleListen === undefined) return undefined;
  const opa = await openOpa(config.opa);
  if (typeof opa === 'string') throw new Error(opa);
  return opa;
}

/** Starts the console's listener (unless --console-listen is off). */
export async function startConsole(
  core: Core,
  fleet: Fleet,
  source: ConsoleSource,
  changes: Changes,
  opa: Opa | undefined,
): Promise<ConsoleServing> {
  const address = core.config.consoleListen;
  if (address === undefined) return { url: undefined, close: async () => {} };
  const deps: ConsoleDeps = {
    mode: source.mode,
    store: core.store,
    objects: source.objects,
    agents: fleet.agents,
    recent: fleet.recent,
    log: core.log.child({ module: 'console' }),
    now: () => core.now().getTime(),
    random: (size) => new Uint8Array(randomBytes(size)),
    adminKeyHashes: () => source.adminKeyHashes(),
    editor: source.editor,
    readTokenSecret: (ns, name) => source.readTokenSecret(ns, name),
    opa,
  };
  const app = createConsoleApp(deps, { version: liveVersion(changes, core.store, fleet.recent) });
  let listening: Awaited<ReturnType<typeof listenOps>>;
  try {
    listening = await listenOps(app.handler, address);
  } catch (err) {
    app.close();
    throw new Error(`--console-listen ${address.host}:${address.port}: ${err instanceof Error ? err.message : String(err)}`);
  }
  core.log.info({ url: `${listening.url}/console/`, opa: opa?.version }, 'Console listening');
  return {
    url: `${listening.url}/console/`,
    async close() {
      app.close();
      await new Promise<void>((resolve) => {
        listening.server.close(() => resolve());
        listening.server.closeAllConnections();
      });
    },
  };
}

/** A new admin key: 32 random bytes, base64url. */
export function newAdminKey(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 of the admin key a file holds (none when it is shorter than 16 characters). */
export async function adminKeyHashesOf(read: () => Promise<string>): Promise<ReadonlySet<string>> {
  const key = await read();
  return new Set(key.length >= 16 ? [hashToken(key)] : []);
}
