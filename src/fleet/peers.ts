// Agents as every replica hears them: this replica's own agents are shared with its peers, and a
// bundle's agents are merged so that each agent counts once, as its newest report describes it.
import type { Agent } from './agents.ts';
import { announce, type RegistryState } from './held.ts';

/** A bundle's agents heard within the window, each once: the newest report of any replica wins. */
export function live(state: RegistryState, key: string, nowMs: number): Agent[] {
  const { windowMs } = state.options;
  const own = state.bundles.get(key);
  if (state.peers.size === 0) return [...(own?.values() ?? [])].filter((a) => nowMs - a.lastReportMs <= windowMs);
  const merged = new Map<string, Agent>();
  const take = (a: Agent): void => {
    if (nowMs - a.lastReportMs > windowMs) return;
    const had = merged.get(a.id);
    if (had === undefined || had.lastReportMs < a.lastReportMs) merged.set(a.id, a);
  };
  for (const a of own?.values() ?? []) take(a);
  for (const p of state.peers.values()) for (const a of p.get(key) ?? []) take(a);
  return [...merged.values()];
}

/** What status could show of a bundle's agents: compared before and after a peer's update. */
function fingerprint(state: RegistryState, key: string, nowMs: number): string {
  return live(state, key, nowMs)
    .map(
      (a) =>
        `${a.id}\u0000${a.activeRevision ?? ''}\u0000${a.error?.code ?? ''}\u0000${a.error?.message ?? ''}\u0000${a.httpCode ?? ''}\u0000${a.alsoLoads.join(',')}\u0000${a.signingKey ?? ''}`,
    )
    .sort()
    .join('\u0001');
}

/** This replica's own agents heard within the window, by `<tenant>/<bundle>`: what it shares with its peers. */
export function exportLocal(state: RegistryState, nowMs: number): Record<string, Agent[]> {
  const out: Record<string, Agent[]> = {};
  for (const [key, agents] of state.bundles) {
    const fresh = [...agents.values()].filter((a) => nowMs - a.lastReportMs <= state.options.windowMs);
    if (fresh.length > 0) out[key] = fresh;
  }
  return out;
}

/** Takes what another replica hears (undefined: it is gone); announces the bundles whose view changed. */
export function setPeer(
  state: RegistryState,
  replica: string,
  data: Readonly<Record<string, readonly Agent[]>> | undefined,
  nowMs: number,
): void {
  const before = state.peers.get(replica);
  const keys = new Set([...(before?.keys() ?? []), ...Object.keys(data ?? {})]);
  const was = new Map([...keys].map((k) => [k, fingerprint(state, k, nowMs)]));
  if (data === undefined) {
    // Its agents are forgotten now, but an agent it heard reaches this replica only at its next poll.
    const { windowMs } = state.options;
    if ([...(before?.values() ?? [])].some((agents) => agents.some((a) => nowMs - a.lastReportMs <= windowMs))) state.peerGoneMs = nowMs;
    state.peers.delete(replica);
  } else state.peers.set(replica, new Map(Object.entries(data)));
  for (const k of keys) if (fingerprint(state, k, nowMs) !== was.get(k)) announce(state, k);
}

/**
 * Adds to `touched` the bundles of which a peer's agent crossed the window since expire() last ran:
 * a peer's agents age on this replica's clock too (a replica that died refreshes them no more).
 */
export function agePeers(state: RegistryState, nowMs: number, touched: Set<string>): void {
  const { windowMs } = state.options;
  for (const p of state.peers.values()) {
    for (const [key, agents] of p) {
      if (agents.some((a) => a.lastReportMs + windowMs < nowMs && a.lastReportMs + windowMs >= state.lastExpireMs)) touched.add(key);
    }
  }
}
