// Which tenant a request speaks for: the tenant of its API key (remembered per connection), and
// the rule index it is decided with.
import type { IncomingMessage } from 'node:http';
import { hashToken, parseBearer } from '../auth/index.ts';
import { buildIndex, type RuleIndex } from '../policy/index.ts';
import type { Snapshot } from '../store/index.ts';
import type { ApiDeps } from './deps.ts';

/** The tenant of a request's API key, or undefined. */
export function tenantOf(snapshot: Snapshot, authorization: string | undefined): string | undefined {
  const key = parseBearer(authorization);
  return key === undefined ? undefined : snapshot.apiKeys.get(hashToken(key))?.tenant;
}

/**
 * The tenant of a request's API key. A keep-alive connection presents the same key on every
 * request: it remembers the header it last presented and the tenant it was worth, for the key set
 * it was checked against. The store still holds only hashes; the header string lives as long as
 * the connection (as Node's parser's copy does).
 */
export function createTenantResolver(deps: Pick<ApiDeps, 'store'>): (req: IncomingMessage) => string | undefined {
  const known = new WeakMap<object, { readonly header: string; readonly keys: object; readonly tenant: string }>();
  return function tenantFor(req) {
    const header = req.headers.authorization;
    if (header === undefined) return undefined;
    const keys = deps.store.snapshot().apiKeys;
    const last = known.get(req.socket);
    if (last !== undefined && last.keys === keys && last.header === header) return last.tenant;
    const tenant = tenantOf(deps.store.snapshot(), header);
    if (tenant !== undefined) known.set(req.socket, { header, keys, tenant });
    return tenant;
  };
}

/** A tenant's rule index; an empty one (kept per tenant) for a tenant without rules. */
export function createIndexLookup(): (snapshot: Snapshot, tenant: string) => RuleIndex {
  const emptyIndexes = new Map<string, RuleIndex>();
  return (snapshot, tenant) => {
    const index = snapshot.tenants.get(tenant)?.index;
    if (index) return index;
    let empty = emptyIndexes.get(tenant);
    if (!empty) {
      empty = buildIndex(tenant, []);
      emptyIndexes.set(tenant, empty);
    }
    return empty;
  };
}
