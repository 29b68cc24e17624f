// The fixture of the rule page's HTTP tests (test/console/http/rule.test.ts, test/opa/console-playground.test.ts):
// the base manifests plus a Draft rule whose description holds a script and a Directory of acme, and
// the playground's requests.
import type { ConsoleClient } from './console.ts';
import { BASE_MANIFESTS } from './service.ts';

const EXTRA = `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: xss-note, namespace: acme }
spec:
  description: <script>alert(1)</script>
  state: Draft
  subjectType: user
  actions: [read]
  resourceType: note
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Directory
metadata: { name: people, namespace: acme }
spec:
  entities:
    - { type: user, id: bob, properties: { team: blue } }
`;

export const PLAYGROUND_MANIFESTS: Record<string, string> = { ...BASE_MANIFESTS, 'extra.yaml': EXTRA };
const PAGE = '/console/t/acme/rules/team-documents';

export const allowed = {
  subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
  action: 'read',
  resource: { type: 'document', id: 'd1', properties: { team: 'blue' } },
};
export const denied = { ...allowed, resource: { type: 'document', id: 'd2', properties: { team: 'red' } } };

/** Posts a request to the playground. */
export function tryIt(c: ConsoleClient, request: unknown): ReturnType<ConsoleClient['post']> {
  return c.post(`${PAGE}/playground`, { request: typeof request === 'string' ? request : JSON.stringify(request) });
}
