// The traffic of the replay proof (test/opa/replay.test.ts), made to be counted by hand: a small
// manifests folder whose rules never overlap where a candidate changes them, a seeded generator of
// requests, and a model of every rule, so the test knows before replaying which request each rule
// allows in the recorded folder and in each candidate.
import { apiKeySecret } from './service.ts';

export const ACME_KEY = 'acme-replay-key-0123456789abcdef';
export const GLOBEX_KEY = 'globex-replay-key-fedcba9876543210';
/** acme's connector and its two bundles: one of every rule, one of the document rules (entityTypes). */
export const CONNECTOR = 'sidecars';
export const BUNDLES = ['everything', 'documents'] as const;
export type BundleName = (typeof BUNDLES)[number];

type Attrs = Record<string, string | number | boolean | string[]>;
/** A decision input as the log records it (properties flattened into the entity). */
export interface Input {
  readonly principal: { readonly type: string; readonly id: string } & Attrs;
  readonly action: string;
  readonly resource: { readonly type: string; readonly id: string } & Attrs;
}

interface ModelRule {
  readonly tenant: 'acme' | 'globex';
  readonly name: string;
  readonly subjectType: string;
  readonly actions: readonly string[];
  readonly resourceType: string;
  readonly condition: string;
  readonly allows: (i: Input) => boolean;
}

const has = (v: unknown, x: string): boolean => Array.isArray(v) && v.includes(x);

/** The recorded folder's rules, each with its condition as CEL (the folder) and as TypeScript (the model). */
const LIVE: readonly ModelRule[] = [
  {
    tenant: 'acme',
    name: 'team-docs',
    subjectType: 'user',
    actions: ['read', 'write'],
    resourceType: 'document',
    condition: 'principal.team == resource.team',
    allows: (i) => i.principal['team'] === i.resource['team'],
  },
  {
    tenant: 'acme',
    name: 'doc-admins',
    subjectType: 'user',
    actions: ['read', 'write', 'delete'],
    resourceType: 'document',
    condition: '"admin" in principal.roles',
    allows: (i) => has(i.principal['roles'], 'admin'),
  },
  {
    tenant: 'acme',
    name: 'report-analysts',
    subjectType: 'user',
    actions: ['read'],
    resourceType: 'report',
    condition: '"analyst" in principal.roles',
    allows: (i) => has(i.principal['roles'], 'analyst'),
  },
  {
    tenant: 'acme',
    name: 'indexer-reads',
    subjectType: 'service_account',
    actions: ['read'],
    resourceType: 'document',
    condition: 'resource.published == true',
    allows: (i) => i.resource['published'] === true,
  },
  {
    tenant: 'globex',
    name: 'file-readers',
    subjectType: 'user',
    actions: ['read'],
    resourceType: 'file',
    condition: 'principal.dept == resource.dept',
    allows: (i) => i.principal['dept'] === i.resource['dept'],
  },
];

const replace = (name: string, over: Partial<ModelRule> | undefined): ModelRule[] =>
  LIVE.flatMap((r) => (r.name !== name ? [r] : over === undefined ? [] : [{ ...r, ...over }]));

/** The folders replayed: as recorded, and the two candidates. */
export const FOLDERS = {
  /** What serve ran with. */
  live: { rules: LIVE, suspended: undefined },
  /** report-analysts Suspended, team-docs narrowed to level ≥ 2: only allow → deny flips. */
  narrowed: {
    rules: replace('report-analysts', undefined).map((r) =>
      r.name === 'team-docs'
        ? {
            ...r,
            condition: 'principal.team == resource.team && principal.level >= 2',
            allows: (i: Input) => i.principal['team'] === i.resource['team'] && Number(i.principal['level']) >= 2,
          }
        : r,
    ),
    suspended: 'report-analysts',
  },
  /** team-docs widened to public documents: only deny → allow flips. */
  widened: {
    rules: replace('team-docs', {
      condition: 'principal.team == resource.team || resource.public == true',
      allows: (i) => i.principal['team'] === i.resource['team'] || i.resource['public'] === true,
    }),
    suspended: undefined,
  },
} as const;
export type FolderName = keyof typeof FOLDERS;

/** The rules of `folder` that allow `input` for `tenant`, in the bundle's selection when `bundle` is given. */
export function allowingRules(folder: FolderName, tenant: string, input: Input, bundle?: string): string[] {
  return FOLDERS[folder].rules
    .filter(
      (r) =>
        r.tenant === tenant &&
        (bundle !== 'documents' || r.subjectType === 'document' || r.resourceType === 'document') &&
        r.subjectType === input.principal.type &&
        r.actions.includes(input.action) &&
        r.resourceType === input.resource.type &&
        r.allows(input),
    )
    .map((r) => r.name);
}

/** Whether a bundle's entityTypes filter lets it decide the input (no filter, or either type listed). */
export const admits = (bundle: BundleName, input: Input): boolean =>
  bundle === 'everything' || input.principal.type === 'document' || input.resource.type === 'document';

/** The manifests folder `folder` as files: both tenants, their keys, acme's connector and bundles. */
export function manifestsOf(folder: FolderName): Record<string, string> {
  const f = FOLDERS[folder];
  const rule = (r: ModelRule, state: string): string =>
    `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: { name: ${r.name}, namespace: ${r.tenant} }\n` +
    `spec: { state: ${state}, subjectType: ${r.subjectType}, actions: [${r.actions.join(', ')}], resourceType: ${r.resourceType}, condition: '${r.condition}' }\n`;
  const suspended = f.suspended === undefined ? [] : LIVE.filter((r) => r.name === f.suspended).map((r) => rule(r, 'Suspended'));
  return {
    'rules.yaml': [...f.rules.map((r) => rule(r, 'Enforced')), ...suspended].join('---\n'),
    'connectors.yaml': `apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: ${CONNECTOR}, namespace: acme }
spec: {}
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: everything, namespace: acme }
spec: { connector: ${CONNECTOR} }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: documents, namespace: acme }
spec: { connector: ${CONNECTOR}, entityTypes: [document] }
`,
    'keys.yaml': `${apiKeySecret('acme', 'key', ACME_KEY)}---\n${apiKeySecret('globex', 'key', GLOBEX_KEY)}`,
  };
}

/** Where a request is sent: the service's three decision endpoints, or an OPA's REST API on a bundle. */
export type Route = 'authorization' | 'evaluation' | 'evaluations' | BundleName;

export interface Request {
  readonly tenant: 'acme' | 'globex';
  readonly route: Route;
  readonly input: Input;
}

/** mulberry32: the same requests on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** How many requests each route gets (11,000 in all). */
export const VOLUME: Readonly<Record<Route, number>> = {
  authorization: 3000,
  evaluation: 2000,
  evaluations: 2500,
  everything: 2000,
  documents: 1500,
};

/** The requests, in the order they are generated (sent concurrently, so logged in about this order). */
export function generate(seed = 28): Request[] {
  const next = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const TEAMS = ['blue', 'red', 'green'];
  const out: Request[] = [];
  let n = 0;
  const make = (tenant: 'acme' | 'globex', route: Route): Request => {
    n += 1;
    if (tenant === 'globex') {
      const dept = (): string => pick(['sales', 'ops']);
      return {
        tenant,
        route,
        input: {
          principal: { type: 'user', id: `g-user-${n % 50}`, dept: dept() },
          action: pick(['read', 'read', 'write']),
          resource: { type: 'file', id: `file-${n}`, dept: dept() },
        },
      };
    }
    const subjectType = next() < 0.15 ? 'service_account' : 'user';
    const roles = ['admin', 'analyst', 'viewer'].filter(() => next() < 0.3);
    const principal: Input['principal'] =
      subjectType === 'user'
        ? { type: 'user', id: `user-${n % 97}`, team: pick(TEAMS), level: 1 + Math.floor(next() * 3), roles }
        : { type: 'service_account', id: `indexer-${n % 5}`, team: pick(TEAMS) };
    const resourceType = next() < 0.7 ? 'document' : 'report';
    const resource: Input['resource'] =
      resourceType === 'document'
        ? { type: 'document', id: `doc-${n}`, team: pick(TEAMS), public: next() < 0.3, published: next() < 0.5 }
        : { type: 'report', id: `report-${n}`, team: pick(TEAMS) };
    return { tenant, route, input: { principal, action: pick(['read', 'read', 'write', 'delete', 'share']), resource } };
  };
  for (const [route, count] of Object.entries(VOLUME) as [Route, number][])
    for (let i = 0; i < count; i++)
      out.push(make(route === 'everything' || route === 'documents' || i % 5 !== 4 ? 'acme' : 'globex', route));
  return out;
}
