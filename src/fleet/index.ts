export { createAgentRegistry, type AgentRegistry } from './registry.ts';
export {
  EMPTY_SUMMARY,
  PROBLEMS_NAMED,
  stateOf,
  summarize,
  type Agent,
  type AgentError,
  type AgentState,
  type AgentSummary,
  type ProblemAgent,
  type Sighting,
} from './agents.ts';
export { classify, DECISION_RESULTS, parseDecisionEvents, parseDecisionUpload, type DecisionEvent, type DecisionResult } from './events.ts';
export { jsonSizeAtMost, parseLosslessJson, redact, REDACTED, TOO_DEEP } from './json.ts';
export { createRecentDecisions, MAX_KEPT_BYTES, RECENT_PER_BUNDLE, type RecentDecision, type RecentDecisions } from './recent.ts';
export { MAX_BUNDLES_NAMED, parseStatusReport, type BundleReport, type Parsed, type StatusReport } from './report.ts';
export {
  agentDecisionLine,
  createDecisionSink,
  MAX_BACKLOG_BYTES,
  serviceDecisionLine,
  type DecisionSink,
  type Destination,
  type ServiceEndpoint,
  type SinkTarget,
} from './sink.ts';
export {
  agentsReport,
  agentsStatus,
  describeProblem,
  rolloutCondition,
  type AgentListing,
  type AgentsReport,
  type AgentsStatus,
  type RolloutCondition,
} from './rollout.ts';
