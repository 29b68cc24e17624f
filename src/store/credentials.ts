// Who holds which secret, by its hash: each connector's current token and its last few retired ones,
// and the API key each Secret holds.
import type { ApiKeyEntry, ConnectorEntry, Snapshot, TenantSnapshot } from './snapshot.ts';
import { setOrDelete, tenantDraft, type StoreState } from './draft.ts';

/** Earlier tokens remembered per connector (memory only): enough to name the sidecars left behind. */
export const RETIRED_TOKENS_KEPT = 4;

/** Sets or (undefined) removes connector `<t>/<n>`; a token it no longer has joins its retired ones. */
export function setConnector(state: StoreState, t: string, n: string, entry: ConnectorEntry | undefined): void {
  const d = tenantDraft(state, t);
  const before = d.connectors.get(n)?.tokenHash;
  if (entry === undefined) d.retired.delete(n);
  else if (before !== undefined && before !== entry.tokenHash) {
    d.retired.set(
      n,
      [before, ...(d.retired.get(n) ?? []).filter((h) => h !== before && h !== entry.tokenHash)].slice(0, RETIRED_TOKENS_KEPT),
    );
  }
  setOrDelete(d.connectors, n, entry);
  state.dirty.add(t);
}

/** Sets or removes (hash undefined) the API key held by Secret `<t>/<secret>`. */
export function setApiKey(state: StoreState, t: string, secret: string, hash: string | undefined): void {
  const key = `${t}/${secret}`;
  if (hash === undefined) state.apiKeys.delete(key);
  else state.apiKeys.set(key, { hash, entry: { tenant: t, secret } });
  state.apiKeysChanged = true;
}

/** Every Secret holding a key with this hash. */
export function apiKeyHolders(state: StoreState, hash: string): readonly ApiKeyEntry[] {
  return [...state.apiKeys.values()].filter((k) => k.hash === hash).map((k) => k.entry);
}

/** Keys by hash; a key held by Secrets of two tenants opens neither (it could not say which tenant). */
export function apiKeyMap(state: StoreState): Map<string, ApiKeyEntry> {
  const map = new Map<string, ApiKeyEntry>();
  const shared = new Set<string>();
  for (const { hash, entry } of state.apiKeys.values()) {
    const other = map.get(hash);
    if (other && other.tenant !== entry.tenant) shared.add(hash);
    else map.set(hash, entry);
  }
  for (const hash of shared) map.delete(hash);
  return map;
}

/** Every connector of `tenants` by the hash of its current token, and by the hashes of its retired ones. */
export function connectorTokens(
  state: StoreState,
  tenants: ReadonlyMap<string, TenantSnapshot>,
): Pick<Snapshot, 'tokens' | 'retiredTokens'> {
  const tokens = new Map<string, ConnectorEntry>();
  const retiredTokens = new Map<string, ConnectorEntry>();
  for (const t of tenants.values()) {
    for (const c of t.connectors.values()) {
      if (c.tokenHash !== undefined) tokens.set(c.tokenHash, c);
      for (const h of state.tenants.get(t.tenant)?.retired.get(c.name) ?? []) retiredTokens.set(h, c);
    }
  }
  return { tokens, retiredTokens };
}
