// The webhook refuses an object with the message its status would show: for the same invalid
// objects, the refusal's message is the Ready condition the controllers write (one function words
// both: admission/spec.ts). Where status goes on to say what stays in effect (a Directory's
// entities), the refusal stops before it: a refused object changes nothing.
import { describe, expect, it } from 'vitest';
import { readReview, verdictOf } from '../src/admission/index.ts';
import type { Kind, SourceObject } from '../src/controller/index.ts';
import { fakeSource, NS, RULE_SPEC as RULE, sourceObject, startController } from './support/controller.ts';

type Judged = Exclude<Kind, 'Secret'>;

const object = (kind: Judged, name: string, spec: unknown): SourceObject => sourceObject(kind, name, spec);

/** Invalid objects of every kind, each for a reason of its own spec alone. */
const INVALID: readonly SourceObject[] = [
  object('Rule', 'not-cel', { ...RULE, condition: 'principal.team == ' }),
  object('Rule', 'multiline', { ...RULE, condition: 'principal.team == resource.team &&\n  resource.owner ==' }),
  object('Rule', 'outside-subset', { ...RULE, condition: 'has(principal.team) ? true : false' }),
  object('Rule', 'unknown-function', { ...RULE, condition: 'principal.name.matches("^a")' }),
  object('Rule', 'repeated-actions', { ...RULE, actions: ['read', 'read'] }),
  object('Rule', 'no-actions', { ...RULE, actions: [] }),
  object('Rule', 'typo', { ...RULE, conditon: 'true' }),
  object('Connector', 'gw.v1', {}),
  object('Connector', 'negative', { tokenRotation: -1 }),
  object('Bundle', 'docs.v1', { connector: 'gateways' }),
  object('Bundle', 'rego-2', { connector: 'gateways', regoVersion: 2 }),
  object('Bundle', 'no-connector', {}),
  object('Directory', 'duplicates', {
    entities: [
      { type: 'user', id: 'alice' },
      { type: 'user', id: 'alice' },
    ],
  }),
  object('Directory', 'own-type', { entities: [{ type: 'user', id: 'bob', properties: { type: 'admin' } }] }),
  object('Directory', 'big-number', { entities: [{ type: 'user', id: 'carol', properties: { n: 2 ** 60 } }] }),
];

/** What the controllers write into status for these objects: the Ready condition of each. */
async function readyConditions(objects: readonly SourceObject[]): Promise<Map<string, { reason?: string; message?: string }>> {
  const source = fakeSource(objects);
  await startController(source).drain();
  const ready = new Map<string, { reason?: string; message?: string }>();
  for (const { key, status } of source.writes) {
    const conditions = status['conditions'] as { type: string; reason?: string; message?: string }[] | undefined;
    const condition = conditions?.find((c) => c.type === 'Ready');
    if (condition) ready.set(`${key.kind}/${key.name}`, condition);
  }
  return ready;
}

/** The webhook's refusal of a CREATE of this object. */
function refusal(o: SourceObject): { reason: string; message: string } | undefined {
  const read = readReview({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `uid-${o.metadata.name}`,
      kind: { group: 'acl.policyagent.dev', version: 'v1alpha1', kind: o.kind },
      operation: 'CREATE',
      namespace: NS,
      object: o.raw,
    },
  });
  if (!read.ok) throw new Error(read.message);
  const verdict = verdictOf(read.review);
  return verdict.allowed ? undefined : verdict.problem;
}

describe('the webhook and status', () => {
  it.each(INVALID.map((o) => [`${o.kind} ${o.metadata.name}`, o] as const))(
    'refuse %s with the message of its Ready condition',
    async (_name, o) => {
      const ready = (await readyConditions([o])).get(`${o.kind}/${o.metadata.name}`);
      const refused = refusal(o);
      expect(refused, 'the webhook admitted it').toBeDefined();
      expect(ready?.reason).toBe(refused?.reason);
      const inEffect = o.kind === 'Directory' ? '; none of its entities are in effect' : '';
      expect(ready?.message).toBe(`${refused?.message}${inEffect}`);
    },
  );

  it('admits the valid objects status calls Ready (or Pending on another object: apply order is free)', async () => {
    const valid = [
      object('Rule', 'team', { ...RULE, condition: 'principal.team == resource.team' }),
      object('Bundle', 'docs', { connector: 'gateways-not-yet-applied' }),
      object('Connector', 'gateways', {}),
      object('Directory', 'people', { entities: [{ type: 'user', id: 'alice', properties: { team: 'blue' } }] }),
    ];
    const ready = await readyConditions(valid);
    expect([...ready.values()].map((c) => c.reason).sort()).toEqual(['Active', 'ConnectorNotFound', 'Enforced', 'Loaded']);
    for (const o of valid) expect(refusal(o), `${o.kind} ${o.metadata.name}`).toBeUndefined();
  });
});
