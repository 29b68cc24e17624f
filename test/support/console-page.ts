// The rule page's renderers without a socket (src/console/pages/rule*.test.ts): a Rule object as the
// source holds it, a PageRequest around it (admin by default, the tenant acme served from `snapshot`,
// the fleet's recent decisions from `recent`), a route of the rule page, and an answer as HTML text.
import { pino } from 'pino';
import type { ObjectEditor, ObjectReader, SourceObject } from '../../src/controller/index.ts';
import { type AgentRegistry, createRecentDecisions, type RecentDecisions } from '../../src/fleet/index.ts';
import { buildIndex, EMPTY_DIRECTORY } from '../../src/policy/index.ts';
import type { Snapshot, Store } from '../../src/store/index.ts';
import type { ConsoleDeps } from '../../src/console/deps.ts';
import { renderHtml } from '../../src/console/html.ts';
import { RULE_ROUTES } from '../../src/console/pages/rule.ts';
import type { PageAnswer, PageRequest } from '../../src/console/routes.ts';
import type { Principal } from '../../src/console/session.ts';

export const NOW = Date.parse('2025-03-01T12:00:00.000Z');
export const SPEC = {
  state: 'Enforced',
  subjectType: 'user',
  actions: ['read'],
  resourceType: 'document',
  condition: 'principal.team == resource.team',
};

/** Rule acme/team-docs (SPEC, generation 2) with the given changes. */
export function rule(
  over: { spec?: unknown; status?: unknown; generation?: number; annotations?: Record<string, string> } = {},
): SourceObject {
  return {
    kind: 'Rule',
    metadata: {
      name: 'team-docs',
      namespace: 'acme',
      generation: over.generation ?? 2,
      ...(over.annotations ? { annotations: over.annotations } : {}),
    },
    raw: { spec: over.spec ?? SPEC, status: over.status ?? {} },
  };
}

function reader(objects: readonly SourceObject[]): ObjectReader {
  return {
    get: (kind, ns, name) => objects.find((o) => o.kind === kind && o.metadata.namespace === ns && o.metadata.name === name),
    list: (kind, ns) => objects.filter((o) => o.kind === kind && (ns === undefined || o.metadata.namespace === ns)),
  };
}

/** Tenant acme with no rules, bundles or directory. */
export const SNAPSHOT: Snapshot = {
  version: 1,
  tenants: new Map([
    ['acme', { tenant: 'acme', index: buildIndex('acme', []), connectors: new Map(), bundles: new Map(), directory: EMPTY_DIRECTORY }],
  ]),
  apiKeys: new Map(),
  tokens: new Map(),
  retiredTokens: new Map(),
};

export interface Fixture {
  readonly objects?: readonly SourceObject[];
  readonly principal?: Principal;
  readonly editor?: ObjectEditor;
  readonly form?: Record<string, string>;
  readonly query?: string;
  readonly rule?: string;
  readonly snapshot?: Snapshot;
  readonly recent?: RecentDecisions;
}

/** A request for the rule page of acme/<rule> (team-docs). */
export function request(f: Fixture = {}): PageRequest {
  const snapshot = f.snapshot ?? SNAPSHOT;
  const deps: ConsoleDeps = {
    mode: 'standalone',
    store: { snapshot: () => snapshot } as unknown as Store,
    objects: reader(f.objects ?? [rule()]),
    agents: {} as AgentRegistry,
    recent: f.recent ?? createRecentDecisions(),
    log: pino({ level: 'silent' }),
    now: () => NOW,
    random: (n) => new Uint8Array(n),
    adminKeyHashes: async () => new Set(),
    editor: f.editor ?? { edit: async () => ({ ok: false, status: 500, message: 'no editor in this test' }) },
    readTokenSecret: () => undefined,
    opa: undefined,
  };
  return {
    principal: f.principal ?? { kind: 'admin' },
    csrf: 'csrf-token',
    tenant: 'acme',
    params: { tenant: 'acme', rule: f.rule ?? 'team-docs' },
    query: new URLSearchParams(f.query ?? ''),
    form: f.form ? new URLSearchParams(f.form) : undefined,
    deps,
    snapshot,
    tenants: ['acme'],
    nowMs: NOW,
    flash: undefined,
  };
}

/** The rule page's route of this method and path suffix ('' is the page itself). */
export function route(method: 'GET' | 'POST', suffix: string) {
  const found = RULE_ROUTES.find((r) => r.method === method && r.path === `/t/:tenant/rules/:rule${suffix}`);
  if (!found) throw new Error(`no route ${method} ${suffix}`);
  return found;
}

/** A page answer's HTML (throws on a redirect or a problem). */
export async function pageText(answer: PageAnswer | Promise<PageAnswer>): Promise<string> {
  const a = await answer;
  if (a.kind !== 'page') throw new Error(`expected a page, got ${JSON.stringify(a)}`);
  return renderHtml(a.body);
}
