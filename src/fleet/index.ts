export { createAgentRegistry, type AgentRegistry } from './registry.ts';
export { EMPTY_SUMMARY, summarize, type Agent, type AgentState, type AgentSummary } from './agents.ts';
export { classify, parseDecisionEvents, parseDecisionUpload, type DecisionEvent, type DecisionResult } from './events.ts';
export { jsonSizeAtMost, parseLosslessJson, redact, REDACTED, TOO_DEEP } from './json.ts';
export { createRecentDecisions, MAX_KEPT_BYTES, type RecentDecision, type RecentDecisions } from './recent.ts';
export { MAX_BUNDLES_NAMED, parseStatusReport, type BundleReport, type StatusReport } from './report.ts';
export {
  agentDecisionLine,
  createDecisionSink,
  MAX_BACKLOG_BYTES,
  serviceDecisionLine,
  type DecisionSink,
  type Destination,
  type SinkTarget,
} from './sink.ts';
export { agentsReport, agentsStatus, rolloutCondition, type AgentsStatus } from './rollout.ts';
