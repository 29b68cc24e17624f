// Directory resources against a real API server: the CRD and its structural schema (free-form
// properties kept as written, entities without an id refused), status written by the operator
// (Ready with entityCount, Conflict), decisions that read the directory, and bundles whose revision
// and policy.rego follow the directory data their rules read.
import { request, type RequestOptions } from 'node:https';
import { ApiextensionsV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { statusOf } from '../../src/kube/index.ts';
import type { Operator } from '../../src/modes/index.ts';
import { adminClients, apiKeySecret, fetchBundle, GROUP, loadConfig, ruleYaml, TEAM_RULE, VERSION, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';
import { tarFile } from '../support/tar.ts';

const API_KEY = 'e2e-directory-api-key-0123456789';
const PLURAL = 'directories';

type Entity = { type: string; id?: string; properties?: unknown };
type DirectoryStatus = {
  phase?: string;
  entityCount?: number;
  observedGeneration?: number;
  conditions?: { type: string; status: string; reason: string; message: string }[];
};

function directoryYaml(ns: string, name: string, entities: Entity[]): KubernetesObject {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Directory',
    metadata: { name, namespace: ns },
    spec: { entities },
  } as KubernetesObject;
}

/** Directories of a namespace through the custom objects API (customApi of test/support knows the other kinds only). */
function directoryApi(namespace: string) {
  const { custom } = adminClients();
  const get = async (
    name: string,
  ): Promise<Record<string, unknown> & { metadata: { generation: number }; spec: { entities: Entity[] }; status?: DirectoryStatus }> =>
    (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name })) as never;
  return {
    get,
    async status(name: string): Promise<DirectoryStatus> {
      try {
        return (await get(name)).status ?? {};
      } catch (err) {
        if (statusOf(err) === 404) return {};
        throw err;
      }
    },
    /** A plain create (no client-side processing of the body), like `kubectl create --validate=false`. */
    create: async (body: KubernetesObject): Promise<unknown> =>
      custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, body }),
  };
}

/** POSTs JSON text as written (a JavaScript client would round numbers beyond 2^53) to the API server. */
async function postRaw(path: string, text: string): Promise<{ status: number; body: string }> {
  const kc = loadConfig();
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  const options: RequestOptions = {
    method: 'POST',
    hostname: server.hostname,
    port: server.port,
    path,
    headers: { 'content-type': 'application/json' },
  };
  await kc.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

/** People of the tenant: alice's team is what TEAM_RULE reads (principal.team == resource.team); email no rule reads. */
const people = (ns: string, aliceTeam: string, email = 'alice@example.com'): KubernetesObject =>
  directoryYaml(ns, 'people', [
    { type: 'user', id: 'alice', properties: { team: aliceTeam, email } },
    { type: 'document', id: 'd1', properties: { team: 'blue' } },
    { type: 'document', id: 'd2', properties: { team: 'red' } },
  ]);

describeE2E('Kubernetes: Directory (real API server)', { timeout: 120_000 }, (e2e) => {
  const decide = async (o: Operator, subject: Record<string, unknown>, resource: Record<string, unknown>): Promise<string> => {
    const res = await fetch(`${o.apiUrl}/authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ subject, action: 'read', resource }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { decision: string }).decision;
  };

  it('installs the Directory CRD: established, with a status subresource and free-form properties', async () => {
    const crd = await loadConfig()
      .makeApiClient(ApiextensionsV1Api)
      .readCustomResourceDefinition({ name: `${PLURAL}.${GROUP}` });
    expect(crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')).toBe(true);
    expect(crd.spec.names).toMatchObject({ kind: 'Directory', plural: PLURAL, shortNames: ['acldir'] });
    expect(crd.spec.scope).toBe('Namespaced');
    const version = crd.spec.versions.find((v) => v.name === VERSION);
    expect(version?.subresources?.status).toEqual({});
    const entity = version?.schema?.openAPIV3Schema?.properties?.['spec']?.properties?.['entities']?.items;
    expect(entity?.required).toEqual(['type', 'id']);
    expect(entity?.properties?.['properties']).toMatchObject({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
  });

  it('keeps free-form properties as written (nested objects, lists, null) and refuses an entity without an id', async () => {
    const { ns } = await e2e.tenant('dirschema');
    const api = directoryApi(ns);
    const properties = {
      team: 'blue',
      groups: ['staff', 'admins'],
      profile: { address: { city: 'Lyon', zip: '69001' }, tags: [{ k: 'a', v: [1, 2.5, true] }, []], empty: {} },
      nothing: null,
      level: 3,
    };
    await api.create(
      directoryYaml(ns, 'rich', [
        { type: 'user', id: 'alice', properties },
        { type: 'user', id: 'bob' },
      ]),
    );
    const stored = await api.get('rich');
    expect(stored.spec.entities).toEqual([
      { type: 'user', id: 'alice', properties },
      { type: 'user', id: 'bob' },
    ]);

    // The structural schema: an entity without an id, or properties that are not an object, are refused.
    const refused = async (entities: Entity[]): Promise<{ code: number | undefined; message: string }> => {
      try {
        await api.create(directoryYaml(ns, 'refused', entities));
      } catch (err) {
        return { code: statusOf(err), message: String((err as { body?: unknown }).body ?? err) };
      }
      throw new Error('the API server accepted it');
    };
    const noId = await refused([{ type: 'user', properties: { team: 'blue' } }]);
    expect(noId.code).toBe(422);
    expect(noId.message).toMatch(/spec\.entities(\[0\])?\.id: Required value/);
    const notAnObject = await refused([{ type: 'user', id: 'x', properties: ['blue'] }]);
    expect(notAnObject.code).toBe(422);
    expect(notAnObject.message).toMatch(/spec\.entities(\[0\])?\.properties.*must be of type object/);

    // Fields the schema does not know are pruned by the API server (the operator never sees them):
    // a misspelled "properties" leaves an entity without properties.
    await api.create(directoryYaml(ns, 'typo', [{ type: 'user', id: 'dave', propertes: { team: 'blue' } } as Entity]));
    expect((await api.get('typo')).spec.entities).toEqual([{ type: 'user', id: 'dave' }]);

    // An integer beyond 2^53, sent as text: the API server stores it exactly (int64), as its reply shows.
    const big = await postRaw(
      `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`,
      `{"apiVersion":"${GROUP}/${VERSION}","kind":"Directory","metadata":{"name":"big","namespace":"${ns}"},"spec":{"entities":[{"type":"user","id":"carol","properties":{"badge":9007199254740993}}]}}`,
    );
    expect(big.status, big.body).toBe(201);
    expect(big.body).toContain('"badge":9007199254740993');

    // The operator reads the same properties (and puts them in effect): null, lists and nesting intact.
    const o = await e2e.operator({ namespace: ns });
    const status = await waitFor('Directory rich Ready', async () => {
      const s = await api.status('rich');
      return s.phase === 'Ready' ? s : undefined;
    });
    expect(status).toMatchObject({ entityCount: 2, observedGeneration: 1 });
    expect(o.store.snapshot().tenants.get(ns)?.directory.get('user', 'alice')).toEqual(properties);
    expect(o.store.snapshot().tenants.get(ns)?.directory.get('user', 'bob')).toEqual({});
    await waitFor('Directory typo Ready', async () => (await api.status('typo')).phase === 'Ready');
    expect(o.store.snapshot().tenants.get(ns)?.directory.get('user', 'dave')).toEqual({});
    // ... while the integer it cannot hold exactly makes that Directory Invalid: none of it is in effect.
    const invalid = await waitFor('Directory big Invalid', async () => {
      const s = await api.status('big');
      return s.phase === 'Invalid' ? s : undefined;
    });
    expect(invalid).toMatchObject({ entityCount: 0, conditions: [{ type: 'Ready', status: 'False', reason: 'InvalidSpec' }] });
    // (The message shows the number as the operator's JSON parser read it: 9007199254740992.)
    expect(invalid.conditions?.[0]?.message).toMatch(
      /^spec\.entities\.0\.properties\.badge: an integer beyond 2\^53 cannot be held exactly \(JSON readers round it\); write it as a string; none of its entities are in effect$/,
    );
    expect(o.store.snapshot().tenants.get(ns)?.directory.get('user', 'carol')).toBeUndefined();
  });

  it('writes Ready with entityCount, decides with the properties, and moves the bundle revision when the data its rules read changes', async () => {
    const t = await e2e.tenant('dir', (ns) => [...docsTenant(ns, 'team-documents'), apiKeySecret(ns, API_KEY), people(ns, 'blue')]);
    const { ns, api } = t;
    const o = await e2e.operator({ namespace: ns });
    const dirs = directoryApi(ns);

    const ready = await waitFor('Directory people Ready', async () => {
      const s = await dirs.status('people');
      return s.phase === 'Ready' ? s : undefined;
    });
    expect(ready).toMatchObject({
      entityCount: 3,
      observedGeneration: 1,
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Loaded', message: '3 entities are in effect' },
        // email is read by no rule: lint says so (docs/testing.md).
        { type: 'Warning', status: 'True', reason: 'DirectoryPropertyUnread' },
      ],
    });
    const alice = { type: 'user', id: 'alice' };
    expect(await decide(o, alice, { type: 'document', id: 'd1' })).toBe('allow');
    expect(await decide(o, alice, { type: 'document', id: 'd2' })).toBe('deny');
    // The request's own attribute wins over the directory's.
    expect(await decide(o, { ...alice, properties: { team: 'red' } }, { type: 'document', id: 'd2' })).toBe('allow');
    // The AuthZEN API of the operator decides the same, and its metadata names the listener (port 0:
    // no Service port to name) under the per-tenant form.
    const authzen = async (path: string, body: unknown): Promise<unknown> =>
      (
        await fetch(`${o.apiUrl}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
          body: JSON.stringify(body),
        })
      ).json();
    expect(
      await authzen('/access/v1/evaluation', { subject: alice, action: { name: 'read' }, resource: { type: 'document', id: 'd1' } }),
    ).toEqual({ decision: true });
    expect(
      await authzen(`/${ns}/access/v1/search/subject`, {
        subject: { type: 'user' },
        action: { name: 'read' },
        resource: { type: 'document', id: 'd1' },
      }),
    ).toMatchObject({ page: { next_token: '' }, results: expect.arrayContaining([{ type: 'user', id: 'alice' }]) });
    expect(await (await fetch(`${o.apiUrl}/.well-known/authzen-configuration/${ns}`)).json()).toMatchObject({
      policy_decision_point: `${o.apiUrl}/${ns}`,
    });

    const first = await t.revision(1);
    const token = await t.token();
    const served1 = await fetchBundle(o, ns, 'gateways', 'docs', token);
    expect(served1.status).toBe(200);
    expect(served1.etag).toBe(first['etag']);
    const rego1 = tarFile(served1.bytes, 'policy.rego') ?? '';
    expect(rego1).toContain('"alice": {"team": "blue"}');
    expect(rego1).not.toContain('alice@example.com');

    // kubectl apply of an edit: alice moves to team red.
    await t.apply([people(ns, 'red')]);
    await waitFor('Directory people generation 2', async () => (await dirs.status('people')).observedGeneration === 2);
    const second = await t.revision(2);
    const served2 = await fetchBundle(o, ns, 'gateways', 'docs', token, served1.etag ?? undefined);
    expect(served2.status).toBe(200);
    expect(served2.etag).toBe(second['etag']);
    const rego2 = tarFile(served2.bytes, 'policy.rego') ?? '';
    expect(rego2).toContain('"alice": {"team": "red"}');
    expect(rego2).not.toContain('"alice": {"team": "blue"}');
    expect(JSON.parse(tarFile(served2.bytes, '.manifest') ?? '{}')).toMatchObject({ revision: '2' });
    expect(await decide(o, alice, { type: 'document', id: 'd2' })).toBe('allow');
    expect(await decide(o, alice, { type: 'document', id: 'd1' })).toBe('deny');

    // An edit of a property no rule reads: the Directory is reconciled, the bundle stays at revision 2.
    await t.apply([people(ns, 'red', 'alice@new.example')]);
    await waitFor('Directory people generation 3', async () => (await dirs.status('people')).observedGeneration === 3);
    await o.controller.idle();
    expect(o.store.snapshot().tenants.get(ns)?.directory.get('user', 'alice')).toEqual({ team: 'red', email: 'alice@new.example' });
    expect(await api.status('Bundle', 'docs')).toMatchObject({ revision: 2, etag: second['etag'] });
    expect((await fetchBundle(o, ns, 'gateways', 'docs', token, served2.etag ?? undefined)).status).toBe(304);
  });

  it('reports Conflict on the Directory whose name sorts later, with a Warning event naming the entity', async () => {
    const t = await e2e.tenant('dirconf', (ns) => [
      ruleYaml(ns, 'team-documents', TEAM_RULE),
      apiKeySecret(ns, API_KEY),
      people(ns, 'blue'),
    ]);
    const ns = t.ns;
    const o = await e2e.operator({ namespace: ns });
    const dirs = directoryApi(ns);
    await waitFor('Directory people Ready', async () => (await dirs.status('people')).phase === 'Ready');

    await t.apply([
      directoryYaml(ns, 'staff', [
        { type: 'user', id: 'alice', properties: { team: 'red' } },
        { type: 'user', id: 'bob', properties: { team: 'red' } },
      ]),
    ]);
    const conflict = await waitFor('Directory staff Conflict', async () => {
      const s = await dirs.status('staff');
      return s.phase === 'Conflict' ? s : undefined;
    });
    expect(conflict).toMatchObject({
      entityCount: 1,
      observedGeneration: 1,
      conditions: [{ type: 'Ready', status: 'False', reason: 'DuplicateEntities' }],
    });
    expect(conflict.conditions?.[0]?.message).toContain('user "alice" (Directory people)');
    expect(await dirs.status('people')).toMatchObject({ phase: 'Ready', entityCount: 3 });
    // people's alice (blue) is in effect, staff's bob too.
    expect(await decide(o, { type: 'user', id: 'alice' }, { type: 'document', id: 'd1' })).toBe('allow');
    expect(await decide(o, { type: 'user', id: 'bob' }, { type: 'document', id: 'd2' })).toBe('allow');
    const { core } = adminClients();
    await waitFor('DuplicateEntities event', async () =>
      (await core.listNamespacedEvent({ namespace: ns })).items.some(
        (e) =>
          e.reason === 'DuplicateEntities' &&
          e.type === 'Warning' &&
          e.involvedObject.kind === 'Directory' &&
          e.involvedObject.name === 'staff',
      ),
    );

    // The winner deleted: staff is Ready, and its alice (red) takes effect.
    await adminClients().custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      name: 'people',
    });
    await waitFor('Directory staff Ready', async () => {
      const s = await dirs.status('staff');
      return s.phase === 'Ready' && s.entityCount === 2;
    });
    expect(await decide(o, { type: 'user', id: 'alice' }, { type: 'document', id: 'd2', properties: { team: 'red' } })).toBe('allow');
  });
});
