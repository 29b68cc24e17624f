// What pages read of the objects: each kind's spec and status parsed with the api schemas (never
// trusted raw), the tenants a viewer may see, and whether a GitOps tool owns an object.
import {
  Bundle,
  BundleStatus,
  Connector,
  ConnectorStatus,
  Directory,
  DirectoryStatus,
  readStatus,
  Rule,
  RuleStatus,
} from '../api/index.ts';
import type { Kind, ObjectReader, SourceObject } from '../controller/index.ts';
import type { Principal } from './session.ts';
import type { Snapshot } from '../store/index.ts';

type Spec<K> = K extends 'Rule'
  ? Rule['spec']
  : K extends 'Connector'
    ? Connector['spec']
    : K extends 'Bundle'
      ? Bundle['spec']
      : Directory['spec'];
type Status<K> = K extends 'Rule'
  ? Partial<RuleStatus>
  : K extends 'Connector'
    ? Partial<ConnectorStatus>
    : K extends 'Bundle'
      ? Partial<BundleStatus>
      : Partial<DirectoryStatus>;
export type ViewKind = 'Rule' | 'Connector' | 'Bundle' | 'Directory';

/** An object as a page shows it: its spec when valid (undefined: invalid, the status says why). */
export interface Viewed<K extends ViewKind> {
  readonly name: string;
  readonly namespace: string;
  readonly object: SourceObject;
  readonly spec: Spec<K> | undefined;
  readonly status: Status<K>;
}

const SCHEMAS = { Rule, Connector, Bundle, Directory } as const;
const STATUSES = { Rule: RuleStatus, Connector: ConnectorStatus, Bundle: BundleStatus, Directory: DirectoryStatus } as const;

// A page refreshes every second while it is open: a spec or status that is the very same value as last
// time is not parsed again (10,000 rules: one parse each, not one per refresh). Keyed by the raw value,
// so what is cached is a pure function of its key; the object around it is always the current one.
const specs = new WeakMap<object, { readonly data: unknown }>();
const statuses = new WeakMap<object, unknown>();

function parsedSpec(kind: ViewKind, raw: unknown): unknown {
  const known = typeof raw === 'object' && raw !== null ? specs.get(raw) : undefined;
  if (known) return known.data;
  const spec = SCHEMAS[kind].shape.spec.safeParse(raw);
  const data = spec.success ? spec.data : undefined;
  if (typeof raw === 'object' && raw !== null) specs.set(raw, { data });
  return data;
}

function parsedStatus(kind: ViewKind, raw: unknown): unknown {
  if (typeof raw === 'object' && raw !== null && statuses.has(raw)) return statuses.get(raw);
  const status: unknown = readStatus(STATUSES[kind], raw);
  if (typeof raw === 'object' && raw !== null) statuses.set(raw, status);
  return status;
}

export function viewed<K extends ViewKind>(kind: K, obj: SourceObject): Viewed<K> {
  // Each kind's schemas parse them: the conditional types only name what they produce.
  return {
    name: obj.metadata.name,
    namespace: obj.metadata.namespace ?? '',
    object: obj,
    spec: parsedSpec(kind, obj.raw['spec']) as Spec<K> | undefined,
    status: parsedStatus(kind, obj.raw['status']) as Status<K>,
  };
}

/** A tenant's objects of a kind, sorted by name. */
export function listViewed<K extends ViewKind>(objects: ObjectReader, kind: K, tenant: string): Viewed<K>[] {
  const list = objects.list(kind, tenant);
  const known = sortedViews.get(list);
  if (known) return known as Viewed<K>[];
  const views = list.map((o) => viewed(kind, o)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  sortedViews.set(list, views);
  return views;
}

// A list one request reads twice (requestReader gives it the same array) is viewed and sorted once.
const sortedViews = new WeakMap<readonly SourceObject[], Viewed<ViewKind>[]>();

/**
 * The objects as one request sees them: each kind listed once from the source and grouped by namespace,
 * so a page that reads a tenant's rules three times (problems, counts, a table) lists them once. Lives
 * for one request only, so it is never stale.
 */
export function requestReader(objects: ObjectReader): ObjectReader {
  const byKind = new Map<Kind, Map<string, SourceObject[]>>();
  const grouped = (kind: Kind): Map<string, SourceObject[]> => {
    const known = byKind.get(kind);
    if (known) return known;
    const groups = new Map<string, SourceObject[]>();
    for (const o of objects.list(kind)) {
      const ns = o.metadata.namespace ?? '';
      const group = groups.get(ns);
      if (group) group.push(o);
      else groups.set(ns, [o]);
    }
    byKind.set(kind, groups);
    return groups;
  };
  return {
    get: (kind, namespace, name) => objects.get(kind, namespace, name),
    list: (kind, namespace) => (namespace === undefined ? [...grouped(kind).values()].flat() : (grouped(kind).get(namespace) ?? [])),
  };
}

export function getViewed<K extends ViewKind>(objects: ObjectReader, kind: K, tenant: string, name: string): Viewed<K> | undefined {
  const obj = objects.get(kind, tenant, name);
  return obj ? viewed(kind, obj) : undefined;
}

const KINDS: readonly Kind[] = ['Rule', 'Connector', 'Bundle', 'Directory'];

/** Every tenant: a namespace with one of our objects, or with something in the store. Sorted. */
export function allTenants(objects: ObjectReader, snapshot: Snapshot): string[] {
  const names = new Set<string>(snapshot.tenants.keys());
  for (const kind of KINDS) for (const o of objects.list(kind)) if (o.metadata.namespace) names.add(o.metadata.namespace);
  return [...names].sort();
}

/** The tenants a principal may see. */
export function visibleTenants(principal: Principal, objects: ObjectReader, snapshot: Snapshot): string[] {
  const all = allTenants(objects, snapshot);
  return principal.kind === 'admin' ? all : all.filter((t) => t === principal.tenant);
}

// Annotations and labels GitOps tools put on what they apply (Argo CD, Flux); such a tool reverts a
// change made anywhere else on its next sync.
const GITOPS_ANNOTATIONS: readonly [RegExp, string][] = [
  [/^argocd\.argoproj\.io\//, 'Argo CD'],
  [/^kustomize\.toolkit\.fluxcd\.io\//, 'Flux'],
  [/^helm\.toolkit\.fluxcd\.io\//, 'Flux'],
];
const GITOPS_LABELS: readonly [RegExp, string][] = [
  [/^argocd\.argoproj\.io\/instance$/, 'Argo CD'],
  [/^app\.kubernetes\.io\/instance$/, 'Argo CD'],
  [/^kustomize\.toolkit\.fluxcd\.io\//, 'Flux'],
  [/^helm\.toolkit\.fluxcd\.io\//, 'Flux'],
];

/** The GitOps tool that owns an object, with the key that says so; undefined: none. */
export function gitOpsOwner(obj: SourceObject): { readonly tool: string; readonly key: string } | undefined {
  const check = (entries: Record<string, string> | undefined, table: readonly [RegExp, string][]) => {
    for (const key of Object.keys(entries ?? {}).sort()) {
      const hit = table.find(([re]) => re.test(key));
      if (hit) return { tool: hit[1], key };
    }
    return undefined;
  };
  return check(obj.metadata.annotations, GITOPS_ANNOTATIONS) ?? check(obj.metadata.labels, GITOPS_LABELS);
}
