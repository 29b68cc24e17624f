// What the console reads and writes, handed in by each mode's wiring (src/modes/console.ts): the
// store, the objects as the source holds them (status included), the fleet's memory, and the ports
// its actions write through. Pages and routes never reach for anything else.
import type { Logger } from 'pino';
import type { ObjectEditor, ObjectReader, TokenSecret } from '../controller/index.ts';
import type { AgentRegistry, RecentDecisions } from '../fleet/index.ts';
import type { Opa } from '../opa/index.ts';
import type { Store } from '../store/index.ts';

/** Where the truth lives: the API server (actions patch objects) or the manifests folder (actions edit files). */
export type Mode = 'kubernetes' | 'standalone';

export interface ConsoleDeps {
  readonly mode: Mode;
  readonly store: Store;
  /** Every Rule, Connector, Bundle and Directory as the source holds it, status as last written. */
  readonly objects: ObjectReader;
  readonly agents: AgentRegistry;
  readonly recent: RecentDecisions;
  readonly log: Logger;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /** `size` random bytes (session ids, the CSRF secret). */
  readonly random: (size: number) => Uint8Array;
  /** SHA-256 (hex) of every admin key valid now (Secrets labelled acl.policyagent.dev/console-admin). */
  adminKeyHashes(): Promise<ReadonlySet<string>>;
  /** Writes an action where the object lives: a merge patch, or an edit of its manifest file. */
  readonly editor: ObjectEditor;
  /** A connector's token Secret as the source holds it (the new token, shown once after an action). */
  readTokenSecret(namespace: string, connector: string): TokenSecret | undefined;
  /** The playground's OPA (--opa), when one is configured and runs. */
  readonly opa: Opa | undefined;
  /** How long an action waits for the controller to act on it before it says so (default 20 s). */
  readonly actionTimeoutMs?: number;
}
