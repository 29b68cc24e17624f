// What the replay tests share: a small candidate folder built offline exactly as `replay` builds it
// (tenant acme with two bundles and a directory, tenant beta with no bundle), and recorded decisions
// made by hand, so every expected count and group is known.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOffline } from '../../src/pipeline/index.ts';
import type { JsonMap } from '../../src/policy/index.ts';
import { type World, worldOf } from '../../src/policytest/index.ts';
import type { Recorded, Verdict } from '../../src/replay/types.ts';

export const MANIFESTS = `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: team-documents, namespace: acme }
spec:
  state: Enforced
  subjectType: user
  actions: [read, write]
  resourceType: document
  condition: principal.team == resource.team
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: admins, namespace: acme }
spec:
  state: Enforced
  subjectType: user
  actions: [read, write, delete]
  resourceType: document
  condition: '"admin" in principal.roles'
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: finance-reports, namespace: acme }
spec:
  state: Enforced
  subjectType: user
  actions: [read]
  resourceType: report
  condition: principal.team == "finance"
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Directory
metadata: { name: people, namespace: acme }
spec:
  entities:
    - type: user
      id: dana
      properties: { team: finance }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: gateways, namespace: acme }
spec: {}
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: documents, namespace: acme }
spec:
  connector: gateways
  entityTypes: [document]
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: all, namespace: acme }
spec:
  connector: gateways
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: everyone-reads, namespace: beta }
spec:
  state: Enforced
  subjectType: user
  actions: [read]
  resourceType: page
`;

/** The candidate folder's world, built from MANIFESTS in a temporary folder (removed again). */
export async function candidateWorld(manifests = MANIFESTS): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), 'acl-replay-world-'));
  try {
    await writeFile(join(dir, 'candidate.yaml'), manifests);
    const built = await buildOffline(dir);
    if ('unreadable' in built) throw new Error(built.unreadable);
    return worldOf(built);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface RecordOptions {
  readonly where?: string;
  readonly tenant?: string;
  readonly source?: 'service' | 'opa';
  readonly bundle?: string;
  readonly decision: Verdict;
  readonly rule?: string;
  readonly principal: JsonMap;
  readonly action: string;
  readonly resource: JsonMap;
}

let line = 0;

/** A recorded decision as record.ts makes it from a log line (logged = the input as the log wrote it). */
export function recorded(o: RecordOptions): Recorded {
  line++;
  const input = { principal: o.principal, action: o.action, resource: o.resource, context: {}, actionProperties: {} };
  return {
    where: o.where ?? `decisions.log:${line}`,
    time: new Date(Date.UTC(2026, 10, 28, 10, 0, line)).toISOString(),
    timeMs: Date.UTC(2026, 10, 28, 10, 0, line),
    tenant: o.tenant ?? 'acme',
    source: o.source ?? 'service',
    ...(o.source === 'opa' ? {} : { endpoint: 'authorization' }),
    ...(o.bundle === undefined ? {} : { bundle: o.bundle }),
    decision: o.decision,
    ...(o.rule === undefined ? {} : { rule: o.rule }),
    input,
    logged: { subject: o.principal, action: { name: o.action }, resource: o.resource },
  };
}
