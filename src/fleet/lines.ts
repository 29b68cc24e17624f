// The decision log's lines: one JSON object per decision, in one shape whoever decided, the service
// (POST /authorization, AuthZEN) or an OPA (its decision-log uploads, built in the uploads thread).
// Credentials are redacted before a line is made (json.ts).
import type { DecisionEvent } from './events.ts';
import { redact } from './json.ts';

/** The endpoint a service decision came from. */
export type ServiceEndpoint = 'authorization' | 'evaluation' | 'evaluations';

const text = (v: string): string => JSON.stringify(v);

/**
 * A decision of the service's own: POST /authorization, an AuthZEN evaluation, or one item of a
 * batch. `input` is the decision input the rules saw (the document OPA would get).
 */
export function serviceDecisionLine(d: {
  /** ISO 8601: the decision's timestamp. */
  readonly time: string;
  readonly tenant: string;
  readonly endpoint: ServiceEndpoint;
  readonly requestId: string | undefined;
  readonly allow: boolean;
  readonly policyId: string;
  readonly input: unknown;
}): string {
  return (
    `{"time":${text(d.time)},"stream":"decisions","tenant":${text(d.tenant)},"source":"service","endpoint":"${d.endpoint}"` +
    `${d.requestId === undefined ? '' : `,"requestId":${text(d.requestId)}`},"decision":"${d.allow ? 'allow' : 'deny'}","policyId":${text(d.policyId)}` +
    `,"path":"acl/allow","input":${JSON.stringify(redact(d.input)) ?? 'null'}}`
  );
}

/** A decision an OPA made, from its decision-log upload. `time` is when OPA decided (its clock). */
export function agentDecisionLine(d: {
  readonly receivedMs: number;
  readonly tenant: string;
  readonly connector: string;
  readonly bundle: string | undefined;
  readonly clientIp: string;
  readonly event: DecisionEvent;
}): string {
  const e = d.event;
  const revision = e.bundles.find((b) => b.name === d.bundle)?.revision;
  const fields: Record<string, unknown> = {
    time: e.timestamp ?? new Date(d.receivedMs).toISOString(),
    stream: 'decisions',
    tenant: d.tenant,
    source: 'opa',
    connector: d.connector,
    bundle: d.bundle ?? null,
    revision: revision ?? null,
    agent: e.agentId,
    agentVersion: e.agentVersion ?? null,
    clientIp: d.clientIp,
    decisionId: e.decisionId ?? null,
    decision: e.decision,
    path: e.path ?? null,
    result: redact(e.result) ?? null,
    ...(e.error === undefined ? {} : { error: redact(e.error) }),
    input: redact(e.input) ?? null,
  };
  return JSON.stringify(fields);
}
