// What the cluster source keeps of an object: the fields the controllers read, a Rule's status
// without the Rego and spec the controller derives again (a digest of them instead), and the
// informer's own copy reduced to what the informer reads. And that the abridged status never makes
// the controller write again: not on a second drain, a restart, an invalid edit or a lint rewrite.
import { ListWatch, type KubernetesListObject, type KubernetesObject, type Watch } from '@kubernetes/client-node';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { fakeSource, NS, RULE_SPEC, startController } from '../../test/support/controller.ts';
import { keyText, type Kind, type SourceObject } from '../controller/index.ts';
import { applyObjectChange, createCache, getObject, releaseInformerCopy, toSource } from './cache.ts';

const log = pino({ level: 'silent' });
const API = 'acl.policyagent.dev/v1alpha1';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** An object as the API server sends it: managed fields, kubectl's last-applied copy, our status. */
function served(
  kind: Kind,
  name: string,
  spec: Record<string, unknown>,
  more: Record<string, unknown> = {},
  generation = 1,
): KubernetesObject {
  return {
    apiVersion: API,
    kind,
    metadata: {
      name,
      namespace: NS,
      uid: `uid-${name}`,
      resourceVersion: '10',
      generation,
      labels: { team: 'docs' },
      annotations: { [LAST_APPLIED]: JSON.stringify({ spec }), 'acl.policyagent.dev/regenerate': 'r1' },
      managedFields: [{ manager: 'kubectl', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }],
    },
    spec,
    ...more,
  } as KubernetesObject;
}

const REGO = 'allow_rule_team if { true }';
const translation = (status: string, generation: number, spec: Record<string, unknown> = RULE_SPEC) => ({
  status,
  generation,
  rego: REGO,
  spec,
});

describe("the cluster source's cache", () => {
  it('keeps the metadata the controllers read, without managed fields or kubectl last-applied copy', () => {
    const held = toSource('Rule', served('Rule', 'team', RULE_SPEC), log);
    expect(held?.metadata).toEqual({
      name: 'team',
      namespace: NS,
      uid: 'uid-team',
      resourceVersion: '10',
      generation: 1,
      labels: { team: 'docs' },
      annotations: { 'acl.policyagent.dev/regenerate': 'r1' },
    });
    expect(held?.raw['spec']).toEqual(RULE_SPEC);
  });

  it("keeps a Rule's current translation without its Rego and spec, and a digest of them", () => {
    const status = { phase: 'Enforced', observedGeneration: 2, translation: translation('Current', 2) };
    const held = toSource('Rule', served('Rule', 'team', RULE_SPEC, { status }, 2), log);
    expect(held?.raw['status']).toEqual({ phase: 'Enforced', observedGeneration: 2, translation: { status: 'Current', generation: 2 } });
    expect(held?.statusDigest).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    // Another Rego is another digest.
    const other = toSource(
      'Rule',
      served('Rule', 'team', RULE_SPEC, { status: { ...status, translation: { ...status.translation, rego: 'x' } } }, 2),
      log,
    );
    expect(other?.statusDigest).not.toBe(held?.statusDigest);
  });

  it('keeps the spec a translation was made from while it is not the spec of the generation held', () => {
    const older = { status: 'Stale', generation: 1, spec: { ...RULE_SPEC, actions: ['write'] } };
    for (const t of [{ ...translation('Stale', 1), ...older }, translation('Current', 1, older.spec)]) {
      const held = toSource(
        'Rule',
        served('Rule', 'team', { ...RULE_SPEC, condition: 'broken +' }, { status: { translation: t } }, 2),
        log,
      );
      expect(held?.raw['status']).toEqual({ translation: { status: t.status, generation: 1, spec: older.spec } });
    }
  });

  it('keeps the status of other kinds, and a Rule status with nothing to leave out, as written', () => {
    const bundle = toSource('Bundle', served('Bundle', 'docs', { connector: 'gw' }, { status: { revision: 3 } }), log);
    expect(bundle?.raw['status']).toEqual({ revision: 3 });
    expect(bundle?.statusDigest).toBeUndefined();
    const failed = { translation: { status: 'Error', generation: 1, message: 'no' } };
    const rule = toSource('Rule', served('Rule', 'team', RULE_SPEC, { status: failed }), log);
    expect(rule?.raw['status']).toEqual(failed);
    expect(rule?.statusDigest).toBeUndefined();
  });

  it("leaves client-node's informer holding only what it reads, and it still tells updates and deletions", async () => {
    const cache = createCache();
    let handler: ((phase: string, obj: KubernetesObject) => void) | undefined;
    let done: ((err: unknown) => Promise<void>) | undefined;
    const watch = {
      watch: async (
        _path: string,
        _query: unknown,
        callback: (phase: string, obj: KubernetesObject) => void,
        onDone: (err: unknown) => Promise<void>,
      ) => {
        handler = callback;
        done = onDone;
        return new AbortController();
      },
    } as unknown as Watch;
    let items: KubernetesObject[] = [served('Rule', 'team', RULE_SPEC, { status: { translation: translation('Current', 1) } })];
    const list = async (): Promise<KubernetesListObject<KubernetesObject>> => ({ metadata: { resourceVersion: '10' }, items });
    const informer = new ListWatch<KubernetesObject>('/rules', watch, list, false);
    const seen: string[] = [];
    for (const type of ['add', 'update', 'delete'] as const)
      informer.on(type, (obj) => {
        seen.push(`${type} ${obj.metadata?.name} ${obj.metadata?.labels?.['team']}`);
        applyObjectChange(cache, 'Rule', type, obj, log);
        releaseInformerCopy(obj);
      });
    await informer.start();
    expect(informer.get('team', NS)).toStrictEqual({
      spec: undefined,
      status: undefined,
      apiVersion: API,
      kind: 'Rule',
      metadata: { name: 'team', namespace: NS, resourceVersion: '10', labels: { team: 'docs' } },
    });
    expect(getObject(cache, 'Rule', NS, 'team')?.raw['spec']).toEqual(RULE_SPEC);
    // The same version again is no update; a newer one is.
    handler?.('MODIFIED', served('Rule', 'team', RULE_SPEC));
    const edited = served('Rule', 'team', { ...RULE_SPEC, actions: ['write'] });
    (edited.metadata as { resourceVersion: string }).resourceVersion = '11';
    handler?.('MODIFIED', edited);
    expect(getObject(cache, 'Rule', NS, 'team')?.raw['spec']).toEqual({ ...RULE_SPEC, actions: ['write'] });
    // A relist (after 410 Gone) without it reports the deletion from the informer's reduced copy.
    items = [];
    await done?.({ statusCode: 410 });
    expect(seen).toEqual(['add team docs', 'update team docs', 'delete team docs']);
    expect(getObject(cache, 'Rule', NS, 'team')).toBeUndefined();
  });
});

/** The controller over objects held as the cluster source holds them; a status write comes back through toSource. */
/** The reason of a status's Warning condition (its first lint finding's code), if any. */
function warningOf(status: Record<string, unknown> | undefined): string | undefined {
  return (status?.['conditions'] as { type: string; reason: string }[] | undefined)?.find((c) => c.type === 'Warning')?.reason;
}

function clusterLike(objects: KubernetesObject[]) {
  let version = 100;
  const asHeld = (o: KubernetesObject): SourceObject => toSource(o.kind as Kind, o, log) as SourceObject;
  const source = fakeSource(objects.map(asHeld));
  const writer = {
    ...source.writer,
    async writeStatus(key: Parameters<typeof source.writer.writeStatus>[0], status: Readonly<Record<string, unknown>>) {
      await source.writer.writeStatus(key, status);
      const text = keyText(key);
      const o = source.objects.get(text);
      // The API server answers with the whole object, its status as written and a new resourceVersion.
      if (o)
        source.objects.set(
          text,
          asHeld({ ...o.raw, metadata: { ...o.metadata, resourceVersion: String(++version) }, status } as KubernetesObject),
        );
    },
  };
  return { source, start: () => startController(source, { writer, lint: true, retryMs: 1, maxRetryMs: 1 }) };
}

describe('a controller over abridged Rule statuses', () => {
  const tenant = (): KubernetesObject[] => [
    served('Connector', 'gateways', {}),
    served('Bundle', 'all', { connector: 'gateways' }),
    served('Rule', 'team', { ...RULE_SPEC, condition: 'principal.team == resource.team' }),
    served('Rule', 'other', { ...RULE_SPEC, resourceType: 'report' }),
  ];
  const rego = (s: { writes: { key: { name: string }; status: Record<string, unknown> }[] }, name: string) =>
    (s.writes.findLast((w) => w.key.name === name)?.status['translation'] as { rego?: string } | undefined)?.rego;

  it('writes each status once, whole, and nothing on a second drain or after a restart', async () => {
    const { source, start } = clusterLike(tenant());
    await start().drain();
    const first = source.writes.length;
    expect(source.writes.map((w) => keyText(w.key)).filter((k) => k.startsWith('Rule/'))).toEqual(['Rule/acme/other', 'Rule/acme/team']);
    expect(rego(source, 'team')).toContain('principal');
    expect(source.objects.get('Rule/acme/team')?.statusDigest).toBeDefined();
    expect(source.status('Rule', 'team')?.['translation']).not.toHaveProperty('rego');
    const run = start();
    await run.drain();
    await run.drain();
    await start().drain();
    expect(source.writes.length).toBe(first);
  });

  it('keeps the last good spec in force through an invalid edit and a restart, writing once', async () => {
    const { source, start } = clusterLike(tenant());
    await start().drain();
    // The edit arrives from the API server with the status as last written, whole.
    const written = source.writes.findLast((w) => w.key.name === 'team')?.status;
    const broken = served('Rule', 'team', { ...RULE_SPEC, condition: 'principal.team ==' }, { status: written }, 2);
    source.objects.set('Rule/acme/team', toSource('Rule', broken, log) as SourceObject);
    const run = start();
    await run.drain();
    const t = source.status('Rule', 'team')?.['translation'] as Record<string, unknown>;
    expect(t).toMatchObject({ status: 'Stale', generation: 1, spec: { ...RULE_SPEC, condition: 'principal.team == resource.team' } });
    expect(
      run.store
        .snapshot()
        .tenants.get(NS)
        ?.index.rules.map((r) => r.model.name)
        .sort(),
    ).toEqual(['other', 'team']);
    const writes = source.writes.length;
    const again = start();
    await again.drain();
    await again.drain();
    expect(source.writes.length).toBe(writes);
    expect(
      again.store
        .snapshot()
        .tenants.get(NS)
        ?.index.rules.map((r) => r.model.name)
        .sort(),
    ).toEqual(['other', 'team']);
  });

  it("reconciles again, and writes whole, a Rule whose lint finding changed with another object's change", async () => {
    const { source, start } = clusterLike([
      served('Connector', 'gateways', {}),
      served('Bundle', 'docs', { connector: 'gateways', entityTypes: ['document'] }),
      served('Rule', 'reports', { ...RULE_SPEC, resourceType: 'report' }),
    ]);
    const run = start();
    await run.drain();
    const warning = () => warningOf(source.status('Rule', 'reports'));
    expect(warning()).toBe('RuleNotBundled');
    const writes = source.writes.length;
    const all = toSource('Bundle', served('Bundle', 'all', { connector: 'gateways' }), log) as SourceObject;
    source.objects.set('Bundle/acme/all', all);
    await run.drain([{ kind: 'Bundle', namespace: NS, name: 'all' }]);
    expect(warning()).toBeUndefined();
    const rewritten = source.writes.slice(writes).filter((w) => w.key.name === 'reports');
    expect(rewritten).toHaveLength(1);
    expect(rego(source, 'reports')).toContain('report');
    const after = source.writes.length;
    await run.drain();
    expect(source.writes.length).toBe(after);
  });
});

describe("a controller's lint pass over a tenant", () => {
  it('runs again only when something lint reads changed, not for the echo of a status write', async () => {
    const { source, start } = clusterLike([
      served('Connector', 'gateways', {}),
      served('Bundle', 'docs', { connector: 'gateways', entityTypes: ['document'] }),
      served('Rule', 'reports', { ...RULE_SPEC, resourceType: 'report' }),
    ]);
    let passes = 0;
    const list = source.reader.list;
    // Only a lint pass lists a tenant's Directories.
    source.reader.list = (kind, namespace) => {
      if (kind === 'Directory') passes++;
      return list(kind, namespace);
    };
    const run = start();
    await run.drain();
    expect(passes).toBe(1);
    const warning = () => warningOf(source.status('Rule', 'reports'));
    expect(warning()).toBe('RuleNotBundled');
    // The echo of every status write, and a resync: nothing lint reads changed.
    await run.drain();
    expect(passes).toBe(1);
    const writes = source.writes.length;
    // A new generation of the Rule is linted, and its finding goes.
    const fixed = served('Rule', 'reports', RULE_SPEC, { status: source.writes.findLast((w) => w.key.name === 'reports')?.status }, 2);
    source.objects.set('Rule/acme/reports', toSource('Rule', fixed, log) as SourceObject);
    await run.drain([{ kind: 'Rule', namespace: NS, name: 'reports' }]);
    expect(passes).toBe(2);
    expect(warning()).toBeUndefined();
    expect(source.writes.slice(writes).map((w) => keyText(w.key))).toContain('Rule/acme/reports');
  });

  it('lints again after following: an object deleted meanwhile changes the findings of the others', async () => {
    const { source, start } = clusterLike([
      served('Connector', 'gateways', {}),
      served('Bundle', 'docs', { connector: 'gateways', entityTypes: ['document'] }),
      served('Bundle', 'all', { connector: 'gateways' }),
      served('Rule', 'reports', { ...RULE_SPEC, resourceType: 'report' }),
    ]);
    const run = start();
    await run.drain();
    const warning = () => warningOf(source.status('Rule', 'reports'));
    expect(warning()).toBeUndefined();
    // Bundle all goes while this replica follows; then it leads again and reconciles every key.
    run.leading = false;
    source.objects.delete('Bundle/acme/all');
    await run.drain([{ kind: 'Bundle', namespace: NS, name: 'all' }]);
    run.leading = true;
    await run.drain();
    expect(warning()).toBe('RuleNotBundled');
  });
});
