// What an OPA agent is, as its reports describe it to us, and how a bundle's agents are counted
// against the revision the bundle serves. Pure data and arithmetic: the caller passes every time in.
import type { BundleReport } from './report.ts';

export type AgentState = 'current' | 'behind' | 'failing';

export interface AgentError {
  readonly code: string;
  readonly message: string;
}

/** One OPA as its last report described it (refused 403 when its connector is Inactive), for one bundle. */
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
  /**
   * The kid of the key this OPA verifies bundles with (its `acl-signing-key` label, which every
   * configuration acl-operator prints sets); undefined when it reports none.
   */
  readonly signingKey: string | undefined;
}

/** What a status report made with the connector's current token says, as the registry takes it. */
export interface Sighting {
  readonly tenant: string;
  readonly agentId: string;
  readonly version: string | undefined;
  /** Its `acl-signing-key` label: the kid it verifies with. */
  readonly signingKey: string | undefined;
  readonly clientIp: string;
  readonly timeMs: number;
  /** The report's entries for bundles of the connector, by our bundle name. */
  readonly bundles: readonly BundleReport[];
  /**
   * The report was answered 403 (the connector is Inactive): this OPA cannot download bundles
   * either, whatever its report says. A report of any other refused token is never recorded.
   */
  readonly refused?: { readonly status: 403; readonly message: string };
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
