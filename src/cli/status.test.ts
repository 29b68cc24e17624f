import { describe, expect, it } from 'vitest';
import type { ObjectState } from '../standalone/index.ts';
import { formatStatus, type StatusSource } from './status.ts';

function object(kind: ObjectState['kind'], name: string, spec: Record<string, unknown>, status?: Record<string, unknown>): ObjectState {
  return { kind, namespace: 'acme', name, generation: 2, specDigest: 'd', source: 'm.yaml', raw: { spec }, status };
}

const notReady = (message: string) => ({ type: 'Ready', status: 'False', reason: 'Invalid', message });

const OBJECTS: ObjectState[] = [
  object(
    'Rule',
    'team-documents',
    {
      state: 'Enforced',
      subjectType: 'user',
      actions: ['read', 'write'],
      resourceType: 'document',
      condition: 'subject.team == resource.team',
    },
    {
      phase: 'Enforced',
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Compiled', message: 'ok' },
        { type: 'Warning', status: 'True', reason: 'PropertiesPath', message: 'PropertiesPath: … Fix: …' },
      ],
      translation: { status: 'Translated', generation: 2, rego: 'allow if { true }' },
    },
  ),
  object(
    'Rule',
    'broken',
    { subjectType: 'user', actions: 'read', resourceType: 'document' },
    { phase: 'Invalid', conditions: [notReady('actions must be a list')], translation: { status: 'Failed', generation: 1, message: 'no' } },
  ),
  object('Rule', 'new', { state: 'Draft' }),
  object(
    'Connector',
    'app',
    {},
    { phase: 'Active', tokenIssuedAt: '2024-01-01T00:00:00Z', tokenSecretName: 'app-token', bundles: ['docs', 'more'] },
  ),
  object('Connector', 'idle', {}, { phase: 'Active', bundles: [] }),
  object(
    'Bundle',
    'docs',
    { connector: 'app' },
    {
      phase: 'Ready',
      revision: 4,
      ruleCount: 1,
      digest: 'sha256:0123456789abcdef0123456789',
      lastSync: '2024-01-02T00:00:00Z',
      agents: { rollout: '1/2' },
      signingKey: 'acl-bbbbbbbbbbbbbbbb',
      conditions: [
        { type: 'RolledOut', status: 'False', reason: 'Behind', message: 'opa-2 is behind' },
        {
          type: 'KeyRotated',
          status: 'False',
          reason: 'Rotating',
          message: '1 of 3 agents verify with acl-bbbbbbbbbbbbbbbb; waiting for …',
        },
      ],
    },
  ),
  object('Bundle', 'more', { connector: 'app' }),
  object('Directory', 'people', {}, { phase: 'Ready', entityCount: 12 }),
];

const LONG_INPUT = { subject: { id: 'alice', roles: ['a'.repeat(60), 'b'.repeat(60)] } };

function fakeState(parts: Partial<StatusSource> = {}): StatusSource {
  const base: StatusSource = {
    dir: '/state',
    objects: () => OBJECTS,
    activity: async () => [
      {
        namespace: 'acme',
        bundle: 'docs',
        records: [
          { time: '2024-01-02T00:00:00Z', revision: 4, clientIp: '10.0.0.1', userAgent: 'Open Policy Agent/1.1', status: 200 },
          { time: '2024-01-01T00:00:00Z', revision: undefined, clientIp: '10.0.0.2', userAgent: '', status: 401 },
        ],
      },
    ],
    agents: async (namespace, bundle) =>
      namespace === 'acme' && bundle === 'docs'
        ? {
            expirySeconds: 300,
            signingKeys: [
              { kid: 'acl-bbbbbbbbbbbbbbbb', agents: 1 },
              { kid: 'acl-aaaaaaaaaaaaaaaa', agents: 1 },
              { kid: null, agents: 1 },
            ],
            list: [
              {
                id: 'opa-1',
                state: 'current',
                version: '1.1.0',
                clientIp: '10.0.0.1',
                lastReport: 't1',
                activeRevision: '4',
                signingKey: 'acl-bbbbbbbbbbbbbbbb',
              },
              {
                id: 'opa-2',
                state: 'failing',
                version: '1.1.0',
                clientIp: '10.0.0.3',
                lastReport: 't2',
                httpCode: 500,
                error: { code: 'x', message: 'y' },
                signingKey: 'acl-aaaaaaaaaaaaaaaa',
              },
              { id: 'opa-3', state: 'behind', clientIp: '10.0.0.4', lastReport: 't3', alsoLoads: ['other', 'third'] },
            ],
          }
        : undefined,
    decisions: async () => [
      {
        namespace: 'acme',
        bundle: 'docs',
        decisions: [
          {
            time: 't4',
            agent: 'opa-1',
            decisionId: 'd1',
            revision: '4',
            path: 'acl/allow',
            decision: 'allow',
            result: true,
            input: { subject: 'alice' },
          },
          {
            time: 't3',
            agent: 'opa-1',
            decisionId: undefined,
            revision: undefined,
            path: undefined,
            decision: 'deny',
            result: false,
            input: LONG_INPUT,
          },
        ],
      },
    ],
    problems: async () => [{ source: 'bad.yaml', document: 2, name: undefined, message: 'not YAML' }],
  };
  return { ...base, ...parts };
}

describe('formatStatus', () => {
  it('lists rules, connectors, bundles, directories and problems as kubectl-like tables', async () => {
    expect(await formatStatus(fakeState())).toMatchInlineSnapshot(`
      "NAMESPACE   NAME             STATE      PHASE      SUBJECT   ACTIONS      RESOURCE   TRANSLATION   SHADOW   WARNING          MESSAGE
      acme        broken           Draft      Invalid    user                   document   Stale                                   actions must be a list
      acme        new              Draft      Pending    <none>                 <none>     Pending
      acme        team-documents   Enforced   Enforced   user      read,write   document   Translated             PropertiesPath

      NAMESPACE   NAME   PHASE    TOKEN ISSUED           TOKEN SECRET   BUNDLES     WARNING   MESSAGE
      acme        app    Active   2024-01-01T00:00:00Z   app-token      docs,more
      acme        idle   Active   <none>                 <none>         <none>

      NAMESPACE   NAME   CONNECTOR   PHASE     REVISION   RULES    AGENTS   ROLLED OUT   KEY ROTATED   DIGEST                 LAST SYNC              WARNING   MESSAGE
      acme        docs   app         Ready     4          1        1/2      False        False         sha256:0123456789ab…   2024-01-02T00:00:00Z             opa-2 is behind
      acme        more   app         Pending   <none>     <none>   <none>   <none>       <none>        <none>                 never
      One OPA per bundle (every bundle's roots are ["acl"]): configurations in /state/opa/<tenant>/<bundle>.yaml

      NAMESPACE   NAME     PHASE   ENTITIES   WARNING   MESSAGE
      acme        people   Ready   12

      FILE       DOCUMENT   NAME     PROBLEM
      bad.yaml   2          <none>   not YAML
      "
    `);
  });

  it('says when the manifests folder has no problems and leaves out empty sections', async () => {
    const rules = OBJECTS.filter((s) => s.kind === 'Rule');
    expect(await formatStatus(fakeState({ objects: () => rules, problems: async () => [] }))).toMatchInlineSnapshot(`
      "NAMESPACE   NAME             STATE      PHASE      SUBJECT   ACTIONS      RESOURCE   TRANSLATION   SHADOW   WARNING          MESSAGE
      acme        broken           Draft      Invalid    user                   document   Stale                                   actions must be a list
      acme        new              Draft      Pending    <none>                 <none>     Pending
      acme        team-documents   Enforced   Enforced   user      read,write   document   Translated             PropertiesPath

      NAMESPACE   NAME   PHASE   TOKEN ISSUED   TOKEN SECRET   BUNDLES   WARNING   MESSAGE

      NAMESPACE   NAME   CONNECTOR   PHASE   REVISION   RULES   AGENTS   ROLLED OUT   KEY ROTATED   DIGEST   LAST SYNC   WARNING   MESSAGE

      No problems in the manifests folder.
      "
    `);
  });

  it('shows one rule with its conditions and Rego translation', async () => {
    const state = fakeState();
    expect(await formatStatus(state, { rule: 'acme/team-documents' })).toMatchInlineSnapshot(`
      "Rule acme/team-documents (generation 2)
        State        Enforced
        Phase        Enforced
        Condition    subject.team == resource.team
        Ready        True Compiled: ok
        Warning      True PropertiesPath: PropertiesPath: … Fix: …
        Translation  Translated (generation 2)

      allow if { true }
      "
    `);
    expect(await formatStatus(state, { rule: 'acme/broken' })).toMatchInlineSnapshot(`
      "Rule acme/broken (generation 2)
        State        Draft
        Phase        Invalid
        Condition    (none)
        Ready        False Invalid: actions must be a list
        Translation  Stale (generation 1): no

      (no translation)
      "
    `);
    expect(await formatStatus(state, { rule: 'nothing' })).toBe('Rule nothing is not in the state folder\n');
  });

  it('shows one bundle with its sync activity, agents and their recent decisions', async () => {
    const state = fakeState();
    expect(await formatStatus(state, { bundle: 'acme/docs' })).toMatchInlineSnapshot(`
      "Bundle acme/docs: revision 4, 1 rule(s), sha256:0123456789abcdef0123456789, last sync 2024-01-02T00:00:00Z
        RolledOut   False Behind: opa-2 is behind
        KeyRotated  False Rotating: 1 of 3 agents verify with acl-bbbbbbbbbbbbbbbb; waiting for …
        Signed by   acl-bbbbbbbbbbbbbbbb

      Sync activity (newest first):
      DATE                   REVISION   CLIENT IP   USER AGENT              STATUS
      2024-01-02T00:00:00Z   4          10.0.0.1    Open Policy Agent/1.1   200
      2024-01-01T00:00:00Z   <none>     10.0.0.2    <none>                  401

      OPA agents (status reports; forgotten after 300 s of silence):
      Keys the agents verify with: acl-bbbbbbbbbbbbbbbb 1, acl-aaaaaaaaaaaaaaaa 1, no label 1
      AGENT   STATE     VERSION   CLIENT IP   LAST REPORT   REVISION   KEY                    PROBLEM
      opa-1   current   1.1.0     10.0.0.1    t1            4          acl-bbbbbbbbbbbbbbbb
      opa-2   failing   1.1.0     10.0.0.3    t2            <none>     acl-aaaaaaaaaaaaaaaa   500 x: y
      opa-3   behind    <none>    10.0.0.4    t3            <none>     <no label>             also loads other, third: only one can activate

      Recent decisions of those agents (newest first):
      TIME   AGENT   DECISION   PATH        REVISION   INPUT
      t4     opa-1   allow      acl/allow   4          {"subject":"alice"}
      t3     opa-1   deny       <none>      <none>     {"subject":{"id":"alice","roles":["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","b…
      "
    `);
    expect(await formatStatus(state, { bundle: 'acme/more' })).toMatchInlineSnapshot(`
      "Bundle acme/more: revision <none>, 0 rule(s), <none>, last sync never
        RolledOut   <none>
        KeyRotated  <none>

      Sync activity (newest first):
      DATE   REVISION   CLIENT IP   USER AGENT   STATUS

      OPA agents (status reports; forgotten after ? s of silence):
        none has reported (configure OPA's status plugin: docs/opa.md)

      Recent decisions of those agents (newest first):
        none reported (configure OPA's decision_logs: docs/opa.md)
      "
    `);
    expect(await formatStatus(state, { bundle: 'acme/gone' })).toBe('Bundle acme/gone is not in the state folder\n');
  });

  it('names the agents a key rotation waits for when nothing else is wrong with a bundle', async () => {
    const rotating = object(
      'Bundle',
      'docs',
      { connector: 'app' },
      {
        phase: 'Ready',
        conditions: [
          { type: 'RolledOut', status: 'True', reason: 'AllAgentsCurrent', message: 'All 2 agent(s) run revision 4' },
          {
            type: 'KeyRotated',
            status: 'False',
            reason: 'Rotating',
            message: '1 of 2 agents verify with acl-b; waiting for opa-2 (acl-a)',
          },
        ],
      },
    );
    const text = await formatStatus(fakeState({ objects: () => [rotating], problems: async () => [] }));
    expect(text).toMatch(/True {9}False {9}.*1 of 2 agents verify with acl-b; waiting for opa-2 \(acl-a\)/);
  });
});
