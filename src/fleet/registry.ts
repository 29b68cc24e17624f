// The OPA agents seen per bundle: what each one (OPA's labels.id) last reported, bounded in number
// and forgotten after a silence. Pure data and arithmetic: the caller passes every time in.
// This file is the registry's surface and what a report does; held.ts holds the agents, peers.ts
// merges what the other replicas hear.
import { byState, summarize, type Agent, type AgentError, type AgentSummary, type Sighting } from './agents.ts';
import { announce, createRegistryState, drop, evict, keyOf, put, type AgentRegistryOptions, type RegistryState } from './held.ts';
import { agePeers, exportLocal, live, setPeer } from './peers.ts';
import type { BundleReport } from './report.ts';

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
  /**
   * When a peer replica last went away while it heard agents (undefined: none did): they are not
   * counted from then on, though they run on and report to this replica at their next poll.
   */
  peerGoneMs(): number | undefined;
}

/** Revisions whose publish time is remembered per bundle. */
const PUBLISHED_KEPT = 8;

/** An agent as a sighting reports it for one bundle of the connector. */
function agentOf(s: Sighting, b: BundleReport, ours: readonly string[]): Agent {
  const refusal: AgentError | undefined = s.refused === undefined ? undefined : { code: 'connector_inactive', message: s.refused.message };
  return {
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
    signingKey: s.signingKey,
  };
}

function record(state: RegistryState, s: Sighting): void {
  const changed = new Set<string>();
  const ours = s.bundles.map((b) => b.name);
  for (const b of s.bundles) {
    const key = keyOf(s.tenant, b.name);
    if (b.stopping) {
      // The OPA is stopping: it will not report again, and is not failing.
      if (state.bundles.get(key)?.has(s.agentId)) {
        drop(state, key, s.agentId);
        changed.add(key);
      }
      continue;
    }
    if (put(state, key, agentOf(s, b, ours))) changed.add(key);
  }
  for (const key of evict(state)) changed.add(key);
  for (const key of changed) announce(state, key);
  if (changed.size > 0) for (const l of state.localListeners) l();
}

function published(state: RegistryState, tenant: string, bundle: string, revision: number, timeMs: number): void {
  const key = keyOf(tenant, bundle);
  let m = state.publishedAt.get(key);
  if (!m) {
    m = new Map();
    state.publishedAt.set(key, m);
  }
  if (m.has(String(revision))) return;
  m.set(String(revision), timeMs);
  for (const old of m.keys()) {
    if (m.size <= PUBLISHED_KEPT) break;
    m.delete(old);
  }
}

function expire(state: RegistryState, nowMs: number): void {
  const touched = new Set<string>();
  for (const entry of state.order.values()) {
    if (nowMs - entry.atMs <= state.options.windowMs) break;
    drop(state, entry.key, entry.id);
    touched.add(entry.key);
  }
  const local = touched.size > 0;
  agePeers(state, nowMs, touched);
  state.lastExpireMs = nowMs;
  for (const key of touched) announce(state, key);
  if (local) for (const l of state.localListeners) l();
}

function forget(state: RegistryState, tenant: string, bundle: string): void {
  const key = keyOf(tenant, bundle);
  for (const id of [...(state.bundles.get(key)?.keys() ?? [])]) drop(state, key, id);
  state.publishedAt.delete(key);
}

/** A listener added to `set`, and the function that removes it again. */
function subscribe<L>(set: Set<L>, listener: L): () => void {
  set.add(listener);
  return () => {
    set.delete(listener);
  };
}

/** An empty registry of the agents that report on bundles, bounded by `options`. */
export function createAgentRegistry(options: AgentRegistryOptions): AgentRegistry {
  const state = createRegistryState(options);
  return {
    windowMs: options.windowMs,
    record: (s) => record(state, s),
    agents: (tenant, bundle, nowMs, revision) => live(state, keyOf(tenant, bundle), nowMs).sort(byState(revision)),
    summary: (tenant, bundle, revision, nowMs) =>
      summarize(live(state, keyOf(tenant, bundle), nowMs), revision === undefined ? undefined : String(revision)),
    published: (tenant, bundle, revision, timeMs) => published(state, tenant, bundle, revision, timeMs),
    expire: (nowMs) => expire(state, nowMs),
    forget: (tenant, bundle) => forget(state, tenant, bundle),
    onChange: (listener) => subscribe(state.listeners, listener),
    size: () => state.order.size,
    exportLocal: (nowMs) => exportLocal(state, nowMs),
    setPeer: (replica, data, nowMs) => setPeer(state, replica, data, nowMs),
    onLocalChange: (listener) => subscribe(state.localListeners, listener),
    peerGoneMs: () => state.peerGoneMs,
  };
}
