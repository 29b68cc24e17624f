// The console's wiring, alike in both modes (docs/console.md): its own plain-HTTP listener (loopback by
// default: port-forward in a cluster), what it reads, the editor its actions write through, its admin
// keys, and the signal its live updates follow, per tenant. Each mode hands in what only it knows.
import { randomBytes } from 'node:crypto';
import { type ConsoleDeps, createConsoleApp, type Mode } from '../console/index.ts';
import type { ObjectEditor, ObjectReader, TokenSecret } from '../controller/index.ts';
import { hashToken } from '../auth/index.ts';
import type { Config } from '../config.ts';
import { type Opa, openOpa } from '../opa/index.ts';
import { listenOps } from '../server/index.ts';
import { liveVersion } from './changes.ts';
import type { Base } from './core.ts';

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

/** The playground's OPA (--opa), checked before anything starts: one that does not run stops the start. */
export async function consoleOpa(config: Pick<Config, 'opa' | 'consoleListen'>): Promise<Opa | undefined> {
  if (config.opa === undefined || config.consoleListen === undefined) return undefined;
  const opa = await openOpa(config.opa);
  if (typeof opa === 'string') throw new Error(opa);
  return opa;
}

/** Starts the console's listener (unless --console-listen is off). */
export async function startConsole(base: Base, source: ConsoleSource, opa: Opa | undefined): Promise<ConsoleServing> {
  const { fleet } = base;
  const address = base.config.consoleListen;
  if (address === undefined) return { url: undefined, close: async () => {} };
  const deps: ConsoleDeps = {
    mode: source.mode,
    store: base.store,
    objects: source.objects,
    agents: fleet.agents,
    recent: fleet.recent,
    log: base.log.child({ module: 'console' }),
    now: () => base.now().getTime(),
    random: (size) => new Uint8Array(randomBytes(size)),
    adminKeyHashes: () => source.adminKeyHashes(),
    editor: source.editor,
    readTokenSecret: (ns, name) => source.readTokenSecret(ns, name),
    opa,
  };
  const app = createConsoleApp(deps, { version: liveVersion(base.changes, base.store, fleet.recent) });
  let listening: Awaited<ReturnType<typeof listenOps>>;
  try {
    listening = await listenOps(app.handler, address);
  } catch (err) {
    app.close();
    throw new Error(`--console-listen ${address.host}:${address.port}: ${err instanceof Error ? err.message : String(err)}`);
  }
  base.log.info({ url: `${listening.url}/console/`, opa: opa?.version }, 'Console listening');
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
