// The controller tests' source, written once: the two ports a source gives the controllers
// (ObjectReader, ClusterWriter) over a Map, behaving as both real sources do (a status write replaces
// the object's status and leaves its spec; a token Secret written is read back; a deleted one is
// gone), and recording every status write, token write and Event for the tests to assert on.
import pino from 'pino';
import {
  createController,
  keyText,
  type ClusterWriter,
  type Controller,
  type ControllerOptions,
  type Kind,
  type ObjectEvent,
  type ObjectKey,
  type ObjectReader,
  type SourceObject,
  type TokenSecret,
} from '../../src/controller/index.ts';
import { createStore, type Store } from '../../src/store/index.ts';

/** The tenant (namespace) of the controller tests unless they name another. */
export const NS = 'acme';
const API = 'acl.policyagent.dev/v1alpha1';

/** A valid Rule spec, Enforced: users read documents. */
export const RULE_SPEC = { state: 'Enforced', subjectType: 'user', actions: ['read'], resourceType: 'document' };

export interface ObjectOptions {
  readonly namespace?: string;
  readonly generation?: number;
  readonly resourceVersion?: string;
  readonly annotations?: Record<string, string>;
  readonly status?: Record<string, unknown>;
}

/** An object as a source holds it (metadata checked, the spec as written), in NS at generation 1 unless told otherwise. */
export function sourceObject(kind: Kind, name: string, spec: unknown, options: ObjectOptions = {}): SourceObject {
  const namespace = options.namespace ?? NS;
  const metadata = {
    name,
    namespace,
    uid: `uid-${namespace}-${name}`,
    generation: options.generation ?? 1,
    ...(options.resourceVersion !== undefined ? { resourceVersion: options.resourceVersion } : {}),
    ...(options.annotations ? { annotations: options.annotations } : {}),
  };
  return { kind, metadata, raw: { apiVersion: API, kind, metadata, spec, ...(options.status ? { status: options.status } : {}) } };
}

/** A status write, with the status written. */
export interface StatusWrite {
  readonly key: ObjectKey;
  readonly status: Record<string, unknown>;
}

export interface FakeSource {
  /** Objects by key text (`Rule/acme/team`): set or delete one as the source would deliver an edit. */
  readonly objects: Map<string, SourceObject>;
  /** Token Secrets by `namespace/connector`. */
  readonly secrets: Map<string, TokenSecret>;
  /** Every status write, in order. */
  readonly writes: StatusWrite[];
  /** The connectors whose token Secret was written, in order. */
  readonly tokenWrites: string[];
  /** Every Event recorded, with its object's key text. */
  readonly events: { key: string; event: ObjectEvent }[];
  readonly reader: ObjectReader;
  readonly writer: ClusterWriter;
  /** While true, status writes fail (an API server away, a lost Lease) and are not recorded. */
  failWrites: boolean;
  /** Every object's key, in the order the objects came: a resync, or a new leader's first pass. */
  keys(): ObjectKey[];
  /** The status an object carries now (undefined: none written, or no such object). */
  status(kind: Kind, name: string, namespace?: string): Record<string, unknown> | undefined;
}

const textOf = (o: SourceObject): string => keyText({ kind: o.kind, namespace: o.metadata.namespace ?? NS, name: o.metadata.name });

/** A source holding `initial`, with token Secrets already written in `secrets` (a restart, another replica's). */
export function fakeSource(initial: readonly SourceObject[], secrets: Map<string, TokenSecret> = new Map()): FakeSource {
  const objects = new Map(initial.map((o) => [textOf(o), o]));
  const writes: StatusWrite[] = [];
  const tokenWrites: string[] = [];
  const events: { key: string; event: ObjectEvent }[] = [];
  const source: FakeSource = {
    objects,
    secrets,
    writes,
    tokenWrites,
    events,
    failWrites: false,
    reader: {
      get: (kind, namespace, name) => objects.get(keyText({ kind, namespace, name })),
      list: (kind, namespace) =>
        [...objects.values()].filter((o) => o.kind === kind && (namespace === undefined || o.metadata.namespace === namespace)),
    },
    writer: {
      readTokenSecret: (namespace, connector) => secrets.get(`${namespace}/${connector}`),
      async writeTokenSecret(owner, secret) {
        tokenWrites.push(owner.metadata.name);
        secrets.set(`${owner.metadata.namespace ?? NS}/${owner.metadata.name}`, secret);
      },
      async deleteTokenSecret(namespace, connector) {
        secrets.delete(`${namespace}/${connector}`);
      },
      async writeStatus(key, status) {
        if (source.failWrites) throw new Error('the API server is away');
        writes.push({ key, status: status as Record<string, unknown> });
        const text = keyText(key);
        const o = objects.get(text);
        // The source delivers the object again with the status written (the spec object stays).
        if (o) objects.set(text, { ...o, raw: { ...o.raw, status } });
      },
      recordEvent(obj, event) {
        events.push({ key: textOf(obj), event });
      },
    },
    keys: () => [...objects.values()].map((o) => ({ kind: o.kind, namespace: o.metadata.namespace ?? NS, name: o.metadata.name })),
    status: (kind, name, namespace = NS) =>
      objects.get(keyText({ kind, namespace, name }))?.raw['status'] as Record<string, unknown> | undefined,
  };
  return source;
}

export interface ControllerRun {
  readonly store: Store;
  readonly controller: Controller;
  /** Whether this replica leads now; the controller asks before every write. */
  leading: boolean;
  /** Queues `keys` (default: every object's) and resolves once the controller is idle. */
  drain(keys?: readonly ObjectKey[]): Promise<void>;
}

export type RunOptions = Omit<Partial<ControllerOptions>, 'objects' | 'leading'> & { readonly leading?: boolean };

/** A controller over `source`: its reader and writer, a new store and a silent log unless given, leading unless told not to. */
export function startController(source: FakeSource, options: RunOptions = {}): ControllerRun {
  const { leading = true, store = createStore(), ...rest } = options;
  const run: ControllerRun = {
    store,
    controller: createController({
      objects: source.reader,
      writer: source.writer,
      log: pino({ level: 'silent' }),
      ...rest,
      store,
      leading: () => run.leading,
    }),
    leading,
    async drain(keys = source.keys()) {
      for (const k of keys) run.controller.enqueue(k);
      await run.controller.idle();
    },
  };
  return run;
}
