import { describe, expect, it } from 'vitest';
import { fakeSource, NS, RULE_SPEC, sourceObject, startController } from '../../test/support/controller.ts';
import {
  activeChanges,
  changesProblem,
  fieldName,
  generateChanges,
  keyText,
  regenerateChanges,
  revokeChanges,
  rotateChanges,
  withChanges,
} from './index.ts';
import type { FieldChange, Kind, ObjectKey, SourceObject } from './types.ts';

function object(
  kind: 'Rule' | 'Connector',
  name: string,
  spec: Record<string, unknown>,
  annotations?: Record<string, string>,
): SourceObject {
  return sourceObject(kind, name, spec, annotations ? { annotations } : {});
}

/** `obj` with `changes` written, as the API server or the folder would then deliver it (annotations do not move the generation). */
function applied(obj: SourceObject, changes: readonly FieldChange[]): SourceObject {
  const raw = withChanges(obj.raw, changes);
  const specMoved = JSON.stringify(raw['spec']) !== JSON.stringify(obj.raw['spec']);
  const metadata = { ...(raw['metadata'] as SourceObject['metadata']), generation: (obj.metadata.generation ?? 0) + (specMoved ? 1 : 0) };
  return { kind: obj.kind, metadata, raw: { ...raw, metadata } };
}

function harness(initial: readonly SourceObject[]) {
  const source = fakeSource(initial);
  const { store, drain } = startController(source);
  const get = (kind: Kind, name: string) => source.objects.get(keyText({ kind, namespace: NS, name })) as SourceObject;
  return {
    store,
    secrets: source.secrets,
    status: (kind: Kind, name: string) => source.status(kind, name),
    get,
    async act(kind: 'Rule' | 'Connector', name: string, changes: readonly FieldChange[]): Promise<void> {
      source.objects.set(keyText({ kind, namespace: NS, name }), applied(get(kind, name), changes));
      await this.settle({ kind, namespace: NS, name });
    },
    settle: (key: ObjectKey): Promise<void> => drain([key]),
    compiledRule: (name: string) =>
      store
        .snapshot()
        .tenants.get(NS)
        ?.index.rules.find((r) => r.model.name === name),
  };
}

describe('the changes of each console action', () => {
  it('Active, Revoke and Generate set one spec field each', () => {
    expect([activeChanges(false), activeChanges(true), revokeChanges(), generateChanges()]).toEqual([
      [{ path: ['spec', 'active'], value: false }],
      [{ path: ['spec', 'active'], value: true }],
      [{ path: ['spec', 'revoked'], value: true }],
      [{ path: ['spec', 'revoked'], value: false }],
    ]);
  });

  it('Rotate raises spec.tokenRotation from its current value, 0 when unset or not a count', () => {
    const rotation = (spec: Record<string, unknown>) => rotateChanges(object('Connector', 'gw', spec))[0]?.value;
    expect([rotation({ tokenRotation: 3 }), rotation({}), rotation({ tokenRotation: 'x' }), rotation({ tokenRotation: -2 })]).toEqual([
      4, 1, 1, 1,
    ]);
  });

  it('Regenerate sets the annotation to the time, and keeps it new when the rule already carries that time', () => {
    const at = '2026-05-01T10:00:00.000Z';
    const value = (previous?: string) =>
      regenerateChanges(at, object('Rule', 'r', RULE_SPEC, previous ? { 'acl.policyagent.dev/regenerate': previous } : undefined))[0]
        ?.value;
    expect(regenerateChanges(at)).toEqual([{ path: ['metadata', 'annotations', 'acl.policyagent.dev/regenerate'], value: at }]);
    expect([value(), value('2026-04-01T00:00:00.000Z'), value(at), value(`${at}.2`)]).toEqual([at, at, `${at}.2`, `${at}.3`]);
  });

  it('writes changes into a copy of an object, creating the mappings they need: from nothing, the merge patch', () => {
    const changes = [...activeChanges(false), ...regenerateChanges('t')];
    expect(withChanges({}, changes)).toEqual({
      spec: { active: false },
      metadata: { annotations: { 'acl.policyagent.dev/regenerate': 't' } },
    });
    const base = { metadata: { name: 'gw', annotations: { a: 'b' } }, spec: null };
    expect(withChanges(base, changes)).toEqual({
      metadata: { name: 'gw', annotations: { a: 'b', 'acl.policyagent.dev/regenerate': 't' } },
      spec: { active: false },
    });
    expect(base).toEqual({ metadata: { name: 'gw', annotations: { a: 'b' } }, spec: null });
  });

  it('names a change the way a person reads it', () => {
    expect([...activeChanges(true), ...regenerateChanges('t')].map(fieldName)).toEqual([
      'spec.active',
      'metadata.annotations["acl.policyagent.dev/regenerate"]',
    ]);
  });

  it('accepts every action and refuses anything else an editor could be asked to write', () => {
    const all = [...activeChanges(true), ...rotateChanges(object('Connector', 'gw', {})), ...revokeChanges(), ...regenerateChanges('t')];
    expect(changesProblem(all)).toBeUndefined();
    expect([
      changesProblem([]),
      changesProblem([{ path: ['metadata', 'name'], value: 'other' }]),
      changesProblem([{ path: ['spec'], value: true }]),
      changesProblem([{ path: ['spec', 'a', 'b'], value: true }]),
      changesProblem([{ path: ['metadata', 'annotations', 'acl.policyagent.dev/regenerate'], value: 3 }]),
      changesProblem([{ path: ['metadata', 'annotations', 'not a key'], value: 'x' }]),
    ]).toEqual([
      'nothing to change',
      'an action may set a field of spec or an annotation, not "metadata.name"',
      'an action may set a field of spec or an annotation, not "spec"',
      'an action may set a field of spec or an annotation, not "spec.a.b"',
      'the annotation "acl.policyagent.dev/regenerate" must be set to a string',
      'an action may set a field of spec or an annotation, not "metadata.annotations.not a key"',
    ]);
  });
});

describe('what the controllers make of the actions', () => {
  it('Regenerate re-translates the rule and status.translation records the new value; the same value again does not', async () => {
    const h = harness([object('Rule', 'team', RULE_SPEC)]);
    await h.settle({ kind: 'Rule', namespace: NS, name: 'team' });
    const first = h.compiledRule('team');
    await h.act('Rule', 'team', regenerateChanges('2026-05-01T10:00:00.000Z', h.get('Rule', 'team')));
    const second = h.compiledRule('team');
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect(h.status('Rule', 'team')?.['translation']).toMatchObject({
      status: 'Current',
      generation: 1,
      regenerate: '2026-05-01T10:00:00.000Z',
    });
    // Delivered again unchanged (a relist): the translation made for that value stays.
    await h.settle({ kind: 'Rule', namespace: NS, name: 'team' });
    expect(h.compiledRule('team')).toBe(second);
    // Clicked again in the same millisecond: still a new value, so still a new translation.
    await h.act('Rule', 'team', regenerateChanges('2026-05-01T10:00:00.000Z', h.get('Rule', 'team')));
    expect(h.compiledRule('team')).not.toBe(second);
    expect(h.status('Rule', 'team')?.['translation']).toMatchObject({ regenerate: '2026-05-01T10:00:00.000Z.2' });
  });

  it('Rotate issues a new token for the next rotation; Revoke removes it; Generate issues another', async () => {
    const h = harness([object('Connector', 'gw', { tokenRotation: 2 })]);
    await h.settle({ kind: 'Connector', namespace: NS, name: 'gw' });
    const before = h.secrets.get('acme/gw');
    await h.act('Connector', 'gw', rotateChanges(h.get('Connector', 'gw')));
    const rotated = h.secrets.get('acme/gw');
    expect({ rotation: rotated?.rotation, replaced: rotated?.token !== before?.token }).toEqual({ rotation: 3, replaced: true });
    await h.act('Connector', 'gw', revokeChanges());
    expect(h.secrets.get('acme/gw')?.token).toBeUndefined();
    expect(h.status('Connector', 'gw')?.['phase']).toBe('Inactive');
    await h.act('Connector', 'gw', generateChanges());
    const generated = h.secrets.get('acme/gw');
    expect(generated?.token).toMatch(/^agent_/);
    expect(generated?.token).not.toBe(rotated?.token);
    expect(h.status('Connector', 'gw')?.['phase']).toBe('Active');
    await h.act('Connector', 'gw', activeChanges(false));
    expect(h.status('Connector', 'gw')?.['phase']).toBe('Inactive');
  });
});
