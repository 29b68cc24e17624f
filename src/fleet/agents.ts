// The OPA agents seen per bundle: what each one (OPA's labels.id) last reported, bounded in number
// and forgotten after a silence. Pure data and arithmetic: the caller passes every time in.
import type { BundleReport } from './report.ts';

export type AgentState = 'current' | 'behind' | 'failing';

export interface AgentError {
  readonly code: string;
  readonly message: string;
}

/** One OPA as its last report (or refused report) described it, for one bundle. */
export interface Agent {
  /** OPA's labels.id. */
  readonly id: string;
  readonly version: string | undefined;
  readonly clientIp: string;
  /** When the last report arrived (our clock, ms since the epoch). */
  readonly lastReportMs: number;
  readonly activeRevision: string | undefined;
  /** OPA's clock, ISO 8601. */
  readonly lastActivation: string | undefined;
  readonly lastDownload: string | undefined;
  /** Why its last download or activation failed (or why its report was refused). */
  readonly error: AgentError | undefined;
  /** HTTP status of its last download, when known. */
  readonly httpCode: number | undefined;
  /** Other bundles of ours this OPA is configured with: at most one of them can activate. */
  readonly alsoLoads: readonly string[];
}

/** What an authenticated (or refused but recognised) status report says, as the registry takes it. */
export interface Sighting {
  readonly tenant: string;
  readonly agentId: string;
  readonly version: string | undefined;
  readonly clientIp: string;
  readonly timeMs: number;
  /** The report's entries for bundles of the connector, by our bundle name. */
  readonly bundles: readonly BundleReport[];
  /**
   * The report was answered 401 (its token was rotated or revoked) or 403 (the connector is
   * Inactive): this OPA cannot download bundles either, whatever its report says.
   */
  readonly refused?: { readonly status: 401 | 403; readonly message: string };
}

export interface ProblemAgent {
  readonly id: string;
  readonly state: 'behind' | 'failing';
  readonly activeRevision: string | undefined;
  readonly error: AgentError | undefined;
  readonly httpCode: number | undefined;
  readonly alsoLoads: readonly string[];
}

export interface AgentSummary {
  /** Agents heard from within the window. */
  readonly reporting: number;
  readonly current: number;
  readonly behind: number;
  readonly failing: number;
  /** The first agents that are not current (failing first, then by id), for messages. */
  readonly problems: readonly ProblemAgent[];
}

export const EMPTY_SUMMARY: AgentSummary = Object.freeze({ reporting: 0, current: 0, behind: 0, failing: 0, problems: [] });

/** How many problem agents a summary names. */
export const PROBLEMS_NAMED = 5;

/** An agent's state against the revision the bundle serves (a string, as OPA reports it). */
export function stateOf(agent: Agent, revision: string | undefined): AgentState {
  if (agent.error !== undefined || agent.alsoLoads.length > 0) return 'failing';
  return revision !== undefined && agent.activeRevision === revision ? 'current' : 'behind';
}

const STATE_ORDER: Readonly<Record<AgentState, number>> = { failing: 0, behind: 1, current: 2 };

/** Failing first, then behind, then current; by id within each. */
export function byState(revision: string | undefined): (a: Agent, b: Agent) => number {
  return (a, b) => STATE_ORDER[stateOf(a, revision)] - STATE_ORDER[stateOf(b, revision)] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Counts agents by state against a revision and names the first problems. */
export function summarize(agents: readonly Agent[], revision: string | undefined): AgentSummary {
  if (agents.length === 0) return EMPTY_SUMMARY;
  let current = 0;
  let behind = 0;
  let failing = 0;
  for (const a of agents) {
    const s = stateOf(a, revision);
    if (s === 'current') current++;
    else if (s === 'behind') behind++;
    else failing++;
  }
  const problems = agents
    .filter((a) => stateOf(a, revision) !== 'current')
    .sort(byState(revision))
    .slice(0, PROBLEMS_NAMED)
    .map((a) => ({
      id: a.id,
      state: stateOf(a, revision) as 'behind' | 'failing',
      activeRevision: a.activeRevision,
      error: a.error,
      httpCode: a.httpCode,
      alsoLoads: a.alsoLoads,
    }));
  return { reporting: agents.length, current, behind, failing, problems };
}

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

export interface AgentRegistry {
  readonly windowMs: number;
  /** Records a report. Bundles whose agents changed in a way status shows are announced to listeners. */
  record(sighting: Sighting): void;
  /** A bundle's agents heard from within the window at `nowMs`, failing first (against `revision`). */
  agents(tenant: string, bundle: string, nowMs: number, revision?: string): Agent[];
  /** A bundle's agents counted against the revision it serves. */
  summary(tenant: string, bundle: string, revision: number | undefined, nowMs: number): AgentSummary;
  /** A bundle revision was published at `timeMs` (for propagation times). */
  published(tenant: string, bundle: string, revision: number, timeMs: number): void;
  /** Forgets agents silent for longer than the window; their bundles are announced. */
  expire(nowMs: number): void;
  /** A bundle is gone: its agents with it. */
  forget(tenant: string, bundle: string): void;
  /** Called with each bundle whose agents changed (arrived, left, changed revision or state). */
  onChange(listener: (tenant: string, bundle: string) => void): () => void;
  /** Agents held over all bundles (this replica's own). */
  size(): number;
  /** This replica's own agents heard within the window, by `<tenant>/<bundle>`: what it shares with its peers. */
  exportLocal(nowMs: number): Record<string, Agent[]>;
  /**
   * What another replica hears (undefined: it is gone). Summaries count every agent once, as the
   * replica that heard from it last describes it; bundles whose view changed are announced.
   */
  setPeer(replica: string, bundles: Readonly<Record<string, readonly Agent[]>> | undefined, nowMs: number): void;
  /** Called when this replica's own agents changed in a way status shows (what it must share). */
  onLocalChange(listener: () => void): () => void;
}

/** `<tenant>/<bundle>` */
const keyOf = (tenant: string, bundle: string): string => `${tenant}/${bundle}`;
/** Revisions whose publish time is remembered per bundle. */
const PUBLISHED_KEPT = 8;

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
    prev.alsoLoads.join('\u0000') !== next.alsoLoads.join('\u0000')
  );
}

export function createAgentRegistry(options: AgentRegistryOptions): AgentRegistry {
  const { windowMs, maxAgents } = options;
  /** Bundle key → agent id → agent. */
  const bundles = new Map<string, Map<string, Agent>>();
  /** `<bundle key> NUL <agent id>` in order of last report, oldest first (a Map keeps insertion order). */
  const order = new Map<string, { readonly key: string; readonly id: string; readonly atMs: number }>();
  /** Tenant → agents held (slots of `order`): whom eviction takes from. */
  const perTenant = new Map<string, number>();
  const tenantOfKey = (key: string): string => key.slice(0, key.indexOf('/'));
  const countSlot = (key: string, by: 1 | -1): void => {
    const tenant = tenantOfKey(key);
    const n = (perTenant.get(tenant) ?? 0) + by;
    if (n <= 0) perTenant.delete(tenant);
    else perTenant.set(tenant, n);
  };
  const publishedAt = new Map<string, Map<string, number>>();
  const listeners = new Set<(tenant: string, bundle: string) => void>();
  const localListeners = new Set<() => void>();
  /** Replica → bundle key → its agents. */
  const peers = new Map<string, ReadonlyMap<string, readonly Agent[]>>();
  /** When expire() last ran: a peer's agent that crossed the window since then is announced. */
  let lastExpireMs = -Infinity;

  const announce = (key: string): void => {
    const slash = key.indexOf('/');
    for (const l of listeners) l(key.slice(0, slash), key.slice(slash + 1));
  };

  /** A bundle's agents heard within the window, each once: the newest report of any replica wins. */
  const live = (key: string, nowMs: number): Agent[] => {
    const own = bundles.get(key);
    if (peers.size === 0) return [...(own?.values() ?? [])].filter((a) => nowMs - a.lastReportMs <= windowMs);
    const merged = new Map<string, Agent>();
    const take = (a: Agent): void => {
      if (nowMs - a.lastReportMs > windowMs) return;
      const had = merged.get(a.id);
      if (had === undefined || had.lastReportMs < a.lastReportMs) merged.set(a.id, a);
    };
    for (const a of own?.values() ?? []) take(a);
    for (const p of peers.values()) for (const a of p.get(key) ?? []) take(a);
    return [...merged.values()];
  };

  /** What status could show of a bundle's agents: compared before and after a peer's update. */
  const fingerprint = (key: string, nowMs: number): string =>
    live(key, nowMs)
      .map(
        (a) =>
          `${a.id}\u0000${a.activeRevision ?? ''}\u0000${a.error?.code ?? ''}\u0000${a.error?.message ?? ''}\u0000${a.httpCode ?? ''}\u0000${a.alsoLoads.join(',')}`,
      )
      .sort()
      .join('\u0001');

  const drop = (key: string, id: string): void => {
    const agents = bundles.get(key);
    agents?.delete(id);
    if (agents?.size === 0) bundles.delete(key);
    if (order.delete(`${key}\u0000${id}`)) countSlot(key, -1);
  };

  function put(key: string, agent: Agent): boolean {
    let agents = bundles.get(key);
    if (!agents) {
      agents = new Map();
      bundles.set(key, agents);
    }
    const prev = agents.get(agent.id);
    agents.set(agent.id, agent);
    const slot = `${key}\u0000${agent.id}`;
    if (!order.delete(slot)) countSlot(key, 1);
    order.set(slot, { key, id: agent.id, atMs: agent.lastReportMs });
    // A change of the active revision, on an agent we knew, is a change propagating.
    if (prev !== undefined && agent.activeRevision !== undefined && prev.activeRevision !== agent.activeRevision) {
      const at = publishedAt.get(key)?.get(agent.activeRevision);
      if (at !== undefined && agent.lastReportMs >= at) options.onPropagated?.((agent.lastReportMs - at) / 1000);
    }
    return relevant(prev, agent);
  }

  /** The tenant holding the most agents (the first of equals in `perTenant`'s order). */
  const largestTenant = (): string | undefined => {
    let best: string | undefined;
    let most = 0;
    for (const [tenant, n] of perTenant)
      if (n > most) {
        best = tenant;
        most = n;
      }
    return best;
  };

  function evict(): Set<string> {
    const touched = new Set<string>();
    while (order.size > maxAgents) {
      const tenant = largestTenant();
      let victim: { readonly key: string; readonly id: string } | undefined;
      // Its least recently heard agent: the first of its slots in order (it holds the most, so soon met).
      for (const entry of order.values())
        if (tenantOfKey(entry.key) === tenant) {
          victim = entry;
          break;
        }
      if (victim === undefined) break;
      drop(victim.key, victim.id);
      touched.add(victim.key);
      options.onEvicted?.();
    }
    return touched;
  }

  return {
    windowMs,
    record(s) {
      const changed = new Set<string>();
      const ours = s.bundles.map((b) => b.name);
      for (const b of s.bundles) {
        const key = keyOf(s.tenant, b.name);
        if (b.stopping) {
          // The OPA is stopping: it will not report again, and is not failing.
          if (bundles.get(key)?.has(s.agentId)) {
            drop(key, s.agentId);
            changed.add(key);
          }
          continue;
        }
        const refusal: AgentError | undefined =
          s.refused === undefined
            ? undefined
            : { code: s.refused.status === 401 ? 'token_rejected' : 'connector_inactive', message: s.refused.message };
        const agent: Agent = {
          id: s.agentId,
          version: s.version,
          clientIp: s.clientIp,
          lastReportMs: s.timeMs,
          activeRevision: b.activeRevision,
          lastActivation: b.lastActivation,
          lastDownload: b.lastDownload,
          error: b.error ?? refusal,
          httpCode: b.httpCode ?? s.refused?.status,
          alsoLoads: ours.filter((n) => n !== b.name),
        };
        if (put(key, agent)) changed.add(key);
      }
      for (const key of evict()) changed.add(key);
      for (const key of changed) announce(key);
      if (changed.size > 0) for (const l of localListeners) l();
    },
    agents(tenant, bundle, nowMs, revision) {
      return live(keyOf(tenant, bundle), nowMs).sort(byState(revision));
    },
    summary(tenant, bundle, revision, nowMs) {
      return summarize(live(keyOf(tenant, bundle), nowMs), revision === undefined ? undefined : String(revision));
    },
    published(tenant, bundle, revision, timeMs) {
      const key = keyOf(tenant, bundle);
      let m = publishedAt.get(key);
      if (!m) {
        m = new Map();
        publishedAt.set(key, m);
      }
      if (m.has(String(revision))) return;
      m.set(String(revision), timeMs);
      for (const old of m.keys()) {
        if (m.size <= PUBLISHED_KEPT) break;
        m.delete(old);
      }
    },
    expire(nowMs) {
      const touched = new Set<string>();
      for (const entry of order.values()) {
        if (nowMs - entry.atMs <= windowMs) break;
        drop(entry.key, entry.id);
        touched.add(entry.key);
      }
      const local = touched.size > 0;
      // A peer's agents age on this replica's clock too (a replica that died refreshes them no more).
      for (const p of peers.values()) {
        for (const [key, agents] of p) {
          if (agents.some((a) => a.lastReportMs + windowMs < nowMs && a.lastReportMs + windowMs >= lastExpireMs)) touched.add(key);
        }
      }
      lastExpireMs = nowMs;
      for (const key of touched) announce(key);
      if (local) for (const l of localListeners) l();
    },
    forget(tenant, bundle) {
      const key = keyOf(tenant, bundle);
      for (const id of [...(bundles.get(key)?.keys() ?? [])]) drop(key, id);
      publishedAt.delete(key);
    },
    onChange(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    size: () => order.size,
    exportLocal(nowMs) {
      const out: Record<string, Agent[]> = {};
      for (const [key, agents] of bundles) {
        const fresh = [...agents.values()].filter((a) => nowMs - a.lastReportMs <= windowMs);
        if (fresh.length > 0) out[key] = fresh;
      }
      return out;
    },
    setPeer(replica, data, nowMs) {
      const before = peers.get(replica);
      const keys = new Set([...(before?.keys() ?? []), ...Object.keys(data ?? {})]);
      const was = new Map([...keys].map((k) => [k, fingerprint(k, nowMs)]));
      if (data === undefined) peers.delete(replica);
      else peers.set(replica, new Map(Object.entries(data)));
      for (const k of keys) if (fingerprint(k, nowMs) !== was.get(k)) announce(k);
    },
    onLocalChange(listener) {
      localListeners.add(listener);
      return () => {
        localListeners.delete(listener);
      };
    },
  };
}
