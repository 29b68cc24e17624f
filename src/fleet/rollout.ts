// What a Bundle's status says about its agents: the counts (and the AGENTS column, "current/reporting")
// and the RolledOut condition a pipeline waits on (kubectl wait --for=condition=RolledOut); and the
// agents listing (GET .../agents, the console, acl-operator status), with the key each verifies with.
import { stateOf, type AgentState, type AgentSummary, type ProblemAgent } from './agents.ts';
import { keyCounts } from './keys.ts';
import type { AgentRegistry } from './registry.ts';

export interface RolloutCondition {
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: 'AllAgentsCurrent' | 'AgentsBehind' | 'AgentsFailing' | 'NoAgents' | 'NotServed';
  readonly message: string;
}

/** `status.agents` of a Bundle. */
export interface AgentsStatus {
  readonly reporting: number;
  readonly current: number;
  readonly behind: number;
  readonly failing: number;
  /** `current/reporting`, the AGENTS column of kubectl get bundles. */
  readonly rollout: string;
}

export function agentsStatus(s: AgentSummary): AgentsStatus {
  return { reporting: s.reporting, current: s.current, behind: s.behind, failing: s.failing, rollout: `${s.current}/${s.reporting}` };
}

/**
 * What to do about an OPA error a person would not connect with us: an OPA started from a
 * configuration without a `signing` block refuses every signed bundle with this message (OPA 0.61
 * and 1.1), as a sidecar configured by hand before bundles were signed does after an upgrade.
 */
function hintFor(message: string | undefined): string {
  return message?.includes('verification key not provided')
    ? '; this OPA has no signing block: start it with the configuration acl-operator prints (ConfigMap acl-opa, or <state-dir>/opa/), docs/opa.md "Signed bundles"'
    : '';
}

/** One problem agent, as a person reads it in a condition message. */
export function describeProblem(p: ProblemAgent): string {
  if (p.alsoLoads.length > 0) {
    return `${p.id} failing (it is configured with ${p.alsoLoads.length + 1} bundles of acl-operator, also ${p.alsoLoads.join(', ')}: their roots overlap, so only one can activate; give each bundle its own OPA)`;
  }
  if (p.state === 'failing') {
    const code = p.httpCode === undefined ? (p.error?.code ?? 'error') : String(p.httpCode);
    return `${p.id} failing (${code}: ${p.error?.message ?? 'no message'}${p.activeRevision === undefined ? '' : `; runs revision ${p.activeRevision}`}${hintFor(p.error?.message)})`;
  }
  return `${p.id} behind (${p.activeRevision === undefined ? 'no revision active yet' : `on revision ${p.activeRevision}`})`;
}

/**
 * RolledOut: True when every agent heard from within the window runs the served revision (and none
 * is failing); False naming how many are behind or failing, and which; Unknown with no agents.
 */
export function rolloutCondition(s: AgentSummary, revision: number | undefined, windowSeconds: number): RolloutCondition {
  if (revision === undefined) return { status: 'Unknown', reason: 'NotServed', message: 'No revision of this bundle is served yet' };
  if (s.reporting === 0) {
    return {
      status: 'Unknown',
      reason: 'NoAgents',
      message: `No OPA has reported its status for this bundle in the last ${windowSeconds} s (OPA's status plugin reports to <service>/status: docs/opa.md)`,
    };
  }
  if (s.current === s.reporting)
    return { status: 'True', reason: 'AllAgentsCurrent', message: `All ${s.reporting} agent(s) run revision ${revision}` };
  const named = s.problems.map(describeProblem);
  const more = s.behind + s.failing - named.length;
  return {
    status: 'False',
    reason: s.failing > 0 ? 'AgentsFailing' : 'AgentsBehind',
    message: `${s.current} of ${s.reporting} agent(s) run revision ${revision}; ${s.behind} behind, ${s.failing} failing: ${named.join('; ')}${more > 0 ? `; and ${more} more` : ''}`,
  };
}

/** One agent as GET .../bundles/{bundle}/agents and acl-operator status --bundle show it. */
export interface AgentListing {
  readonly id: string;
  readonly state: AgentState;
  readonly version: string | null;
  readonly clientIp: string;
  readonly lastReport: string;
  readonly activeRevision: string | null;
  readonly lastActivation: string | null;
  readonly lastDownload: string | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly httpCode: number | null;
  readonly alsoLoads?: readonly string[];
  /** The kid of the key it verifies bundles with (its acl-signing-key label); null: it reports none. */
  readonly signingKey: string | null;
}

export interface AgentsReport {
  readonly tenant: string;
  readonly connector: string;
  readonly bundle: string;
  readonly revision: number;
  readonly expirySeconds: number;
  readonly agents: AgentsStatus;
  readonly rolledOut: RolloutCondition;
  /** The agents counted by the key they verify with, most first; `kid` null: no label. */
  readonly signingKeys: readonly { readonly kid: string | null; readonly agents: number }[];
  /** Failing first, then behind, then current. */
  readonly list: readonly AgentListing[];
}

/** Everything known of a bundle's agents at `nowMs`. */
export function agentsReport(
  registry: AgentRegistry,
  b: { tenant: string; connector: string; bundle: string; revision: number },
  nowMs: number,
): AgentsReport {
  const summary = registry.summary(b.tenant, b.bundle, b.revision, nowMs);
  const windowSeconds = Math.round(registry.windowMs / 1000);
  const revision = String(b.revision);
  const agents = registry.agents(b.tenant, b.bundle, nowMs, revision);
  return {
    ...b,
    expirySeconds: windowSeconds,
    agents: agentsStatus(summary),
    rolledOut: rolloutCondition(summary, b.revision, windowSeconds),
    signingKeys: keyCounts(agents).map((k) => ({ kid: k.kid ?? null, agents: k.agents })),
    list: agents.map((a) => ({
      id: a.id,
      state: stateOf(a, revision),
      version: a.version ?? null,
      clientIp: a.clientIp,
      lastReport: new Date(a.lastReportMs).toISOString(),
      activeRevision: a.activeRevision ?? null,
      lastActivation: a.lastActivation ?? null,
      lastDownload: a.lastDownload ?? null,
      error: a.error ?? null,
      httpCode: a.httpCode ?? null,
      ...(a.alsoLoads.length > 0 ? { alsoLoads: a.alsoLoads } : {}),
      signingKey: a.signingKey ?? null,
    })),
  };
}
