// The agent registry's state, and this replica's own agents in it: held per bundle and in order of
// last report, counted per tenant, and when full evicted from the tenant holding the most.
import type { Agent, AgentError } from './agents.ts';

export interface AgentRegistryOptions {
  /** An agent not heard from for this long is forgotten. */
  readonly windowMs: number;
  /**
   * At most this many agents over all bundles. When full, the least recently heard agent of the
   * tenant holding the most goes first: one tenant's flood of agent ids evicts its own agents, not
   * another tenant's.
   */
  readonly maxAgents: number;
  /** An agent reported a revision active that was published `seconds` earlier (a change, not a start). */
  readonly onPropagated?: (seconds: number) => void;
  /** An agent was dropped to make room. */
  readonly onEvicted?: () => void;
}

/** A held agent's place in the order of last reports. */
interface Slot {
  readonly key: string;
  readonly id: string;
  readonly atMs: number;
}

export interface RegistryState {
  readonly options: AgentRegistryOptions;
  /** Bundle key → agent id → agent. */
  readonly bundles: Map<string, Map<string, Agent>>;
  /** `<bundle key> NUL <agent id>` in order of last report, oldest first (a Map keeps insertion order). */
  readonly order: Map<string, Slot>;
  /** Tenant → agents held (slots of `order`): whom eviction takes from. */
  readonly perTenant: Map<string, number>;
  /** Bundle key → revision → when it was published (ms). */
  readonly publishedAt: Map<string, Map<string, number>>;
  readonly listeners: Set<(tenant: string, bundle: string) => void>;
  readonly localListeners: Set<() => void>;
  /** Replica → bundle key → its agents. */
  readonly peers: Map<string, ReadonlyMap<string, readonly Agent[]>>;
  /** When expire() last ran: a peer's agent that crossed the window since then is announced. */
  lastExpireMs: number;
  /** When a peer replica went away with agents heard within the window (their next reports come here). */
  peerGoneMs: number | undefined;
}

/** A registry holding no agents. */
export function createRegistryState(options: AgentRegistryOptions): RegistryState {
  return {
    options,
    bundles: new Map(),
    order: new Map(),
    perTenant: new Map(),
    publishedAt: new Map(),
    listeners: new Set(),
    localListeners: new Set(),
    peers: new Map(),
    lastExpireMs: -Infinity,
    peerGoneMs: undefined,
  };
}

/** `<tenant>/<bundle>` */
export const keyOf = (tenant: string, bundle: string): string => `${tenant}/${bundle}`;

function sameError(a: AgentError | undefined, b: AgentError | undefined): boolean {
  return a?.code === b?.code && a?.message === b?.message;
}

/** Whether status could say something else after `next` replaced `prev`. */
function relevant(prev: Agent | undefined, next: Agent): boolean {
  return (
    prev === undefined ||
    prev.activeRevision !== next.activeRevision ||
    !sameError(prev.error, next.error) ||
    prev.httpCode !== next.httpCode ||
    // KeyRotated names the key each agent verifies with: a restarted sidecar's new key is news.
    prev.signingKey !== next.signingKey ||
    prev.alsoLoads.join('\u0000') !== next.alsoLoads.join('\u0000')
  );
}

const tenantOfKey = (key: string): string => key.slice(0, key.indexOf('/'));

function countSlot(state: RegistryState, key: string, by: 1 | -1): void {
  const tenant = tenantOfKey(key);
  const n = (state.perTenant.get(tenant) ?? 0) + by;
  if (n <= 0) state.perTenant.delete(tenant);
  else state.perTenant.set(tenant, n);
}

/** Tells the listeners that the agents of bundle `key` changed. */
export function announce(state: RegistryState, key: string): void {
  const slash = key.indexOf('/');
  for (const l of state.listeners) l(key.slice(0, slash), key.slice(slash + 1));
}

/** Forgets one held agent of a bundle. */
export function drop(state: RegistryState, key: string, id: string): void {
  const agents = state.bundles.get(key);
  agents?.delete(id);
  if (agents?.size === 0) state.bundles.delete(key);
  if (state.order.delete(`${key}\u0000${id}`)) countSlot(state, key, -1);
}

/** Holds an agent's newest report (reporting a propagation time); true when status could show the change. */
export function put(state: RegistryState, key: string, agent: Agent): boolean {
  let agents = state.bundles.get(key);
  if (!agents) {
    agents = new Map();
    state.bundles.set(key, agents);
  }
  const prev = agents.get(agent.id);
  agents.set(agent.id, agent);
  const slot = `${key}\u0000${agent.id}`;
  if (!state.order.delete(slot)) countSlot(state, key, 1);
  state.order.set(slot, { key, id: agent.id, atMs: agent.lastReportMs });
  // A change of the active revision, on an agent we knew, is a change propagating.
  if (prev !== undefined && agent.activeRevision !== undefined && prev.activeRevision !== agent.activeRevision) {
    const at = state.publishedAt.get(key)?.get(agent.activeRevision);
    if (at !== undefined && agent.lastReportMs >= at) state.options.onPropagated?.((agent.lastReportMs - at) / 1000);
  }
  return relevant(prev, agent);
}

/** The tenant holding the most agents (the first of equals in `perTenant`'s order). */
function largestTenant(state: RegistryState): string | undefined {
  let best: string | undefined;
  let most = 0;
  for (const [tenant, n] of state.perTenant)
    if (n > most) {
      best = tenant;
      most = n;
    }
  return best;
}

/** Drops agents until at most maxAgents are held; returns the keys of the bundles that lost one. */
export function evict(state: RegistryState): Set<string> {
  const touched = new Set<string>();
  while (state.order.size > state.options.maxAgents) {
    const tenant = largestTenant(state);
    let victim: { readonly key: string; readonly id: string } | undefined;
    // Its least recently heard agent: the first of its slots in order (it holds the most, so soon met).
    for (const entry of state.order.values())
      if (tenantOfKey(entry.key) === tenant) {
        victim = entry;
        break;
      }
    if (victim === undefined) break;
    drop(state, victim.key, victim.id);
    touched.add(victim.key);
    state.options.onEvicted?.();
  }
  return touched;
}
