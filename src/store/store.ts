// The in-memory state: the controller changes a draft, publish() freezes it into a new immutable
// Snapshot and tells listeners which bundles now have a different ETag. Readers never wait.
import {
  buildDirectory,
  buildDirectorySteps,
  buildIndex,
  buildIndexSteps,
  byRuleName,
  EMPTY_DIRECTORY,
  rulePosition,
  updateDirectory,
  updateIndex,
  type CompiledRule,
  type DirectoryEntity,
  type EntityChange,
  type EntityDirectory,
  type RuleIndex,
} from '../policy/index.ts';
import { createActivityLog, type ActivityLog } from './activity.ts';
import { bundleKey, type ApiKeyEntry, type BundleEntry, type ConnectorEntry, type Snapshot, type TenantSnapshot } from './snapshot.ts';

interface TenantDraft {
  readonly rules: Map<string, CompiledRule>;
  readonly connectors: Map<string, ConnectorEntry>;
  readonly bundles: Map<string, BundleEntry>;
  /** Entities by Directory name, unchanged properties objects kept from the previous list. */
  readonly directories: Map<string, readonly DirectoryEntity[]>;
  /** The lists as the controller gave them, by Directory name. */
  readonly given: Map<string, readonly DirectoryEntity[]>;
  rulesChanged: boolean;
  /** Bumped by every rule change: an index prepared at an older version is not used. */
  rulesVersion: number;
  /** The deployed rules by name (undefined: not made since the last change it could not follow). */
  byName: readonly CompiledRule[] | undefined;
  /** Rules placed into byName since it was last read. */
  byNamePlaced: number;
  /** Names of the rules set since the last publish: a few of them update the index rather than rebuild it. */
  readonly changedRules: Set<string>;
  prepared: { readonly version: number; readonly index: RuleIndex } | undefined;
  /** The tenant's directory, built from `directories` when first asked for after a change. */
  directory: EntityDirectory | undefined;
  /** Bumped by every Directory change. */
  directoryVersion: number;
  /** The directory last built or updated, which the next edits update. */
  lastDirectory: EntityDirectory | undefined;
  /** Entities listed before or after a Directory edit since lastDirectory was made, by key. */
  readonly touched: Map<string, DirectoryEntity>;
  /** Entity (`type NUL id`) → names of the Directories that list it, sorted. Kept as they change. */
  readonly listings: Map<string, string[]>;
  /** Connector name → hashes of its earlier tokens (rotated or revoked), newest first. */
  readonly retired: Map<string, string[]>;
}

/** `rules` (sorted by name) with the rule named `name` replaced, added or (undefined) removed: a new array. */
function placeByName(rules: readonly CompiledRule[], name: string, rule: CompiledRule | undefined): CompiledRule[] {
  const lo = rulePosition(rules, name);
  const next = rules.slice();
  const present = next[lo]?.model.name === name;
  if (rule === undefined) {
    if (present) next.splice(lo, 1);
  } else next.splice(lo, present ? 1 : 0, rule);
  return next;
}

/** Entity changes applied to the last directory at once; more build it whole, in slices. */
const MAX_DIRECTORY_UPDATE = 2048;

/** A Directory's entities by key, made once per entity list (lists are never changed in place). */
const ENTITY_INDEX = new WeakMap<readonly DirectoryEntity[], Map<string, DirectoryEntity>>();

/** Earlier tokens remembered per connector (memory only): enough to name the sidecars left behind. */
export const RETIRED_TOKENS_KEPT = 4;

function entityKey(type: string, id: string): string {
  return `${type}\u0000${id}`;
}

/** What the controller may change. Nothing is visible to readers until publish(). */
export interface StoreDraft {
  /** The deployed rule of a key (undefined: none). */
  rule(tenant: string, name: string): CompiledRule | undefined;
  /** Every deployed rule of a tenant. */
  rules(tenant: string): readonly CompiledRule[];
  setRule(tenant: string, name: string, rule: CompiledRule | undefined): void;
  connector(tenant: string, name: string): ConnectorEntry | undefined;
  setConnector(tenant: string, name: string, entry: ConnectorEntry | undefined): void;
  bundle(tenant: string, name: string): BundleEntry | undefined;
  bundles(tenant: string): readonly BundleEntry[];
  setBundle(tenant: string, name: string, entry: BundleEntry | undefined): void;
  /** The entities Directory `<tenant>/<name>` puts in effect (undefined: none). */
  directoryEntities(tenant: string, name: string): readonly DirectoryEntity[] | undefined;
  /** Names of the tenant's Directories with entities in the draft, sorted. */
  directoryNames(tenant: string): readonly string[];
  setDirectoryEntities(tenant: string, name: string, entities: readonly DirectoryEntity[] | undefined): void;
  /** Names of the Directories that list an entity, sorted: the first one's properties are in effect. */
  listedBy(tenant: string, type: string, id: string): readonly string[];
  /**
   * The tenant's entity directory: every Directory's entities, in Directory name order; an entity
   * listed by two Directories is the first one's. The same object until a Directory changes.
   */
  directory(tenant: string): EntityDirectory;
  /** Builds the tenant's directory, if a Directory changed, through `run` (in slices): directory() is then at hand. */
  prepareDirectory(tenant: string, run: Run): Promise<void>;
  /** Sets or removes (hash undefined) the API key held by Secret `<tenant>/<secret>`. */
  setApiKey(tenant: string, secret: string, hash: string | undefined): void;
  /** Every Secret holding a key with this hash. */
  apiKeyHolders(hash: string): readonly ApiKeyEntry[];
}

/** Runs steps to their end (src/work/slice.ts drive(), or at once). */
export type Run = <T>(steps: Generator<unknown, T>) => Promise<T>;

export type BundleListener = (changed: readonly BundleEntry[], snapshot: Snapshot) => void;

export interface Store {
  snapshot(): Snapshot;
  readonly draft: StoreDraft;
  /**
   * Publishes the draft when it changed; returns the bundles whose answer may differ now: a new
   * ETag, a new bundle, or a connector whose token or activity changed.
   */
  publish(): readonly BundleEntry[];
  /**
   * Does ahead of publish() what it would otherwise do at once (the rule indexes of changed
   * tenants), through `run`, which may spread the work over turns of the event loop.
   */
  prepare(run: Run): Promise<void>;
  onBundleChange(listener: BundleListener): () => void;
  readonly activity: ActivityLog;
}

const EMPTY_INDEX_RULES: readonly CompiledRule[] = [];

export function createStore(options: { activityCapacity?: number } = {}): Store {
  const tenants = new Map<string, TenantDraft>();
  const apiKeys = new Map<string, { hash: string; entry: ApiKeyEntry }>();
  const dirty = new Set<string>();
  let apiKeysChanged = false;
  let current: Snapshot = { version: 0, tenants: new Map(), apiKeys: new Map(), tokens: new Map(), retiredTokens: new Map() };
  const listeners = new Set<BundleListener>();
  const activity = createActivityLog(options.activityCapacity);

  const tenant = (name: string): TenantDraft => {
    let t = tenants.get(name);
    if (!t) {
      t = {
        rules: new Map(),
        connectors: new Map(),
        bundles: new Map(),
        directories: new Map(),
        given: new Map(),
        rulesChanged: true,
        rulesVersion: 0,
        byName: undefined,
        byNamePlaced: 0,
        changedRules: new Set(),
        prepared: undefined,
        directory: undefined,
        directoryVersion: 0,
        lastDirectory: undefined,
        touched: new Map(),
        listings: new Map(),
        retired: new Map(),
      };
      tenants.set(name, t);
    }
    return t;
  };
  const set = <V>(map: Map<string, V>, key: string, value: V | undefined): void => {
    if (value === undefined) map.delete(key);
    else map.set(key, value);
  };

  const draft: StoreDraft = {
    rule: (t, n) => tenants.get(t)?.rules.get(n),
    rules(t) {
      const d = tenants.get(t);
      if (!d) return EMPTY_INDEX_RULES;
      // By name, kept between calls: bundles translate rules in name order, and a list already in
      // order is not sorted again.
      d.byNamePlaced = 0;
      d.byName ??= [...d.rules.values()].sort(byRuleName);
      return d.byName;
    },
    setRule(t, n, rule) {
      const d = tenant(t);
      set(d.rules, n, rule);
      // A few changes are placed (one copy each); many at once sort again when next asked.
      d.byNamePlaced++;
      d.byName = d.byName && d.byNamePlaced <= 64 ? placeByName(d.byName, n, rule) : undefined;
      d.rulesChanged = true;
      d.rulesVersion++;
      d.changedRules.add(n);
      dirty.add(t);
    },
    connector: (t, n) => tenants.get(t)?.connectors.get(n),
    setConnector(t, n, entry) {
      const d = tenant(t);
      const before = d.connectors.get(n)?.tokenHash;
      if (entry === undefined) d.retired.delete(n);
      else if (before !== undefined && before !== entry.tokenHash) {
        d.retired.set(
          n,
          [before, ...(d.retired.get(n) ?? []).filter((h) => h !== before && h !== entry.tokenHash)].slice(0, RETIRED_TOKENS_KEPT),
        );
      }
      set(d.connectors, n, entry);
      dirty.add(t);
    },
    bundle: (t, n) => tenants.get(t)?.bundles.get(n),
    bundles: (t) => [...(tenants.get(t)?.bundles.values() ?? [])],
    setBundle(t, n, entry) {
      set(tenant(t).bundles, n, entry);
      dirty.add(t);
    },
    directoryEntities: (t, n) => tenants.get(t)?.given.get(n),
    directoryNames: (t) => [...(tenants.get(t)?.directories.keys() ?? [])].sort(),
    setDirectoryEntities(t, n, given) {
      const d = tenant(t);
      const before = d.directories.get(n) ?? [];
      // An entity whose properties did not change keeps its properties object: the directory and the
      // Rego lines kept with it need nothing new for it.
      const old = new Map(before.map((e) => [entityKey(e.type, e.id), e]));
      let entities = given;
      if (given && before.length > 0) {
        let kept = 0;
        const mapped = given.map((e) => {
          const was = old.get(entityKey(e.type, e.id));
          if (!was || was.properties === e.properties || JSON.stringify(was.properties) !== JSON.stringify(e.properties)) return e;
          kept++;
          return { ...e, properties: was.properties };
        });
        if (kept > 0) entities = mapped;
      }
      // What the controller gave is what it reads back (it compares lists by identity).
      set(d.given, n, given && given.length > 0 ? given : undefined);
      for (const e of before) d.touched.set(entityKey(e.type, e.id), e);
      for (const e of entities ?? []) d.touched.set(entityKey(e.type, e.id), e);
      for (const e of before) {
        const key = entityKey(e.type, e.id);
        const names = (d.listings.get(key) ?? []).filter((x) => x !== n);
        if (names.length === 0) d.listings.delete(key);
        else d.listings.set(key, names);
      }
      set(d.directories, n, entities && entities.length > 0 ? entities : undefined);
      for (const e of entities ?? []) {
        const key = entityKey(e.type, e.id);
        const names = d.listings.get(key);
        if (!names) d.listings.set(key, [n]);
        else if (!names.includes(n)) {
          names.push(n);
          names.sort();
        }
      }
      d.directory = undefined;
      d.directoryVersion++;
      dirty.add(t);
    },
    listedBy: (t, type, id) => tenants.get(t)?.listings.get(entityKey(type, id)) ?? [],
    async prepareDirectory(t, run) {
      const d = tenants.get(t);
      if (!d || d.directories.size === 0 || d.directory) return;
      if (updatedDirectory(d)) return;
      const version = d.directoryVersion;
      const built = await run(buildDirectorySteps([...d.directories.keys()].sort().flatMap((n) => d.directories.get(n) ?? [])));
      // A Directory set meanwhile makes this build stale: directory() builds the newest at once.
      if (d.directoryVersion === version) built_(d, built);
    },
    directory(t) {
      const d = tenants.get(t);
      if (!d || d.directories.size === 0) return EMPTY_DIRECTORY;
      if (!d.directory && !updatedDirectory(d))
        built_(d, buildDirectory([...d.directories.keys()].sort().flatMap((n) => d.directories.get(n) ?? [])));
      return d.directory ?? EMPTY_DIRECTORY;
    },
    setApiKey(t, secret, hash) {
      const key = `${t}/${secret}`;
      if (hash === undefined) apiKeys.delete(key);
      else apiKeys.set(key, { hash, entry: { tenant: t, secret } });
      apiKeysChanged = true;
    },
    apiKeyHolders: (hash) => [...apiKeys.values()].filter((k) => k.hash === hash).map((k) => k.entry),
  };

  /** Records a directory built whole: later edits update it. */
  function built_(d: TenantDraft, directory: EntityDirectory): void {
    d.directory = directory;
    d.lastDirectory = directory;
    d.touched.clear();
  }

  /**
   * The tenant's directory updated from the last one built, for the entities the Directory edits
   * since then touched (each one's first listing now, or none): false when there is no such
   * directory or too much changed (then it is built whole, in slices).
   */
  function updatedDirectory(d: TenantDraft): boolean {
    const base = d.lastDirectory;
    if (!base || d.touched.size > Math.max(10_000, base.size / 10)) return false;
    const changes: EntityChange[] = [];
    for (const [key, e] of d.touched) {
      const owner = d.listings.get(key)?.[0];
      const props = owner === undefined ? undefined : entityIn(d, owner, key)?.properties;
      if (props !== base.get(e.type, e.id)) changes.push({ type: e.type, id: e.id, properties: props });
    }
    // Many changes touch most buckets: a whole build in slices costs the loop less than copying them at once.
    if (changes.length > MAX_DIRECTORY_UPDATE) return false;
    const next = updateDirectory(base, changes);
    if (!next) return false;
    built_(d, next);
    return true;
  }

  /** An entity of a Directory by key, through an index made once per entity list. */
  function entityIn(d: TenantDraft, name: string, key: string): DirectoryEntity | undefined {
    const list = d.directories.get(name);
    if (!list) return undefined;
    let index = ENTITY_INDEX.get(list);
    if (!index) {
      index = new Map(list.map((e) => [entityKey(e.type, e.id), e]));
      ENTITY_INDEX.set(list, index);
    }
    return index.get(key);
  }

  /** The index updated for the few rules changed since `previous` (undefined: build it whole). */
  function updated(d: TenantDraft, previous: TenantSnapshot | undefined): RuleIndex | undefined {
    if (!previous || d.changedRules.size > Math.max(64, d.rules.size / 8)) return undefined;
    const added = [...d.changedRules].map((n) => d.rules.get(n)).filter((r): r is CompiledRule => r !== undefined);
    return updateIndex(previous.index, d.changedRules, added);
  }

  function freeze(name: string, d: TenantDraft, previous: TenantSnapshot | undefined): TenantSnapshot {
    const prepared = d.prepared?.version === d.rulesVersion ? d.prepared.index : undefined;
    const index =
      d.rulesChanged || !previous ? (prepared ?? updated(d, previous) ?? buildIndex(name, [...d.rules.values()])) : previous.index;
    d.rulesChanged = false;
    d.changedRules.clear();
    d.prepared = undefined;
    return { tenant: name, index, connectors: new Map(d.connectors), bundles: new Map(d.bundles), directory: draft.directory(name) };
  }

  /** Keys by hash; a key held by Secrets of two tenants opens neither (it could not say which tenant). */
  function apiKeyMap(): Map<string, ApiKeyEntry> {
    const map = new Map<string, ApiKeyEntry>();
    const shared = new Set<string>();
    for (const { hash, entry } of apiKeys.values()) {
      const other = map.get(hash);
      if (other && other.tenant !== entry.tenant) shared.add(hash);
      else map.set(hash, entry);
    }
    for (const hash of shared) map.delete(hash);
    return map;
  }

  /** Builds the indexes the next publish needs, through `run` (which may spread the work over turns of the event loop). */
  async function prepare(run: Run): Promise<void> {
    for (const name of [...dirty]) {
      const d = tenants.get(name);
      if (!d?.rulesChanged || d.prepared?.version === d.rulesVersion) continue;
      const version = d.rulesVersion;
      const index = updated(d, current.tenants.get(name)) ?? (await run(buildIndexSteps(name, [...d.rules.values()])));
      if (d.rulesVersion === version) d.prepared = { version, index };
    }
  }

  function publish(): readonly BundleEntry[] {
    if (dirty.size === 0 && !apiKeysChanged) return [];
    const nextTenants = new Map(current.tenants);
    const changed: BundleEntry[] = [];
    for (const name of dirty) {
      const d = tenants.get(name);
      const previous = current.tenants.get(name);
      if (!d || (d.rules.size === 0 && d.connectors.size === 0 && d.bundles.size === 0 && d.directories.size === 0)) {
        nextTenants.delete(name);
        tenants.delete(name);
        continue;
      }
      const frozen = freeze(name, d, previous);
      nextTenants.set(name, frozen);
      for (const b of frozen.bundles.values()) {
        const before = previous?.bundles.get(b.name);
        const oldConnector = previous?.connectors.get(b.connector);
        const newConnector = frozen.connectors.get(b.connector);
        // A new ETag, or a connector whose token or activity changed: held polls must hear at once.
        if (
          before?.built.etag !== b.built.etag ||
          before.connector !== b.connector ||
          oldConnector?.tokenHash !== newConnector?.tokenHash ||
          oldConnector?.active !== newConnector?.active
        )
          changed.push(b);
      }
    }
    for (const name of dirty) {
      for (const b of current.tenants.get(name)?.bundles.values() ?? []) {
        if (nextTenants.get(name)?.bundles.has(b.name)) continue;
        // Gone: its held polls are answered (404) now, and its activity forgotten.
        activity.forget(bundleKey(name, b.name));
        changed.push(b);
      }
    }
    dirty.clear();
    const tokens = new Map<string, ConnectorEntry>();
    const retiredTokens = new Map<string, ConnectorEntry>();
    for (const t of nextTenants.values()) {
      for (const c of t.connectors.values()) {
        if (c.tokenHash !== undefined) tokens.set(c.tokenHash, c);
        for (const h of tenants.get(t.tenant)?.retired.get(c.name) ?? []) retiredTokens.set(h, c);
      }
    }
    const keys = apiKeysChanged ? apiKeyMap() : current.apiKeys;
    apiKeysChanged = false;
    current = { version: current.version + 1, tenants: nextTenants, apiKeys: keys, tokens, retiredTokens };
    for (const listener of listeners) listener(changed, current);
    return changed;
  }

  return {
    snapshot: () => current,
    draft,
    prepare,
    publish,
    onBundleChange(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    activity,
  };
}
