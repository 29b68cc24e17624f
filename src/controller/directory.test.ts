// Directory → the tenant's entity directory and status: Ready with entityCount, Conflict between two
// Directories (the name that sorts first wins), Invalid specs that put nothing in effect, bundles
// rebuilt in the same drain (their revision moving only when the embedded data does), decisions
// reading the published directory, and followers that put entities in effect without writing status.
import { decisionInput } from '../../test/support/rules.ts';
import { describe, expect, it } from 'vitest';
import { decide } from '../policy/index.ts';
import { createStore, type Snapshot, type Store } from '../store/index.ts';
import { fakeSource, NS, sourceObject, startController } from '../../test/support/controller.ts';
import type { Controller } from './controller.ts';
import { keyText, type Kind, type ObjectEvent, type ObjectKey, type SourceObject } from './types.ts';

const OTHER = 'globex';

type Entity = { type: string; id: string; properties?: unknown };

function object(kind: Kind, namespace: string, name: string, spec: unknown, generation = 1): SourceObject {
  return sourceObject(kind, name, spec, { namespace, generation });
}

const directoryObj = (name: string, entities: Entity[], options: { namespace?: string; generation?: number } = {}): SourceObject =>
  object('Directory', options.namespace ?? NS, name, { entities }, options.generation);

/** Rules that read user.role and record.owner (never email or anything else). */
const tenantObjects = (namespace: string): SourceObject[] => [
  object('Connector', namespace, 'gateways', {}),
  object('Bundle', namespace, 'docs', { connector: 'gateways' }),
  object('Rule', namespace, 'admins', {
    state: 'Enforced',
    subjectType: 'user',
    actions: ['read', 'delete'],
    resourceType: 'record',
    condition: 'principal.role == "admin"',
  }),
  object('Rule', namespace, 'owners', {
    state: 'Enforced',
    subjectType: 'user',
    actions: ['read'],
    resourceType: 'record',
    condition: 'principal.id == resource.owner',
  }),
];

const PEOPLE: Entity[] = [
  { type: 'user', id: 'alice', properties: { role: 'member', email: 'alice@example.com', groups: ['staff'] } },
  { type: 'user', id: 'bob', properties: { role: 'admin', email: 'bob@example.com' } },
  { type: 'record', id: 'r1', properties: { owner: 'alice', status: 'active' } },
];

interface Harness {
  readonly store: Store;
  readonly controller: Controller;
  readonly objects: Map<string, SourceObject>;
  readonly statusWrites: ObjectKey[];
  /** Events on Directories. */
  readonly events: { key: string; event: ObjectEvent }[];
  /** Every snapshot published, in order. */
  readonly published: Snapshot[];
  /** Puts (or with undefined removes) an object and runs the controller on its key only. */
  put(kind: Kind, namespace: string, name: string, obj: SourceObject | undefined): Promise<void>;
  status(kind: Kind, name: string, namespace?: string): Record<string, unknown> | undefined;
  setLeading(leading: boolean): void;
}

async function harness(initial: SourceObject[], leading = true): Promise<Harness> {
  const source = fakeSource(initial);
  const store = createStore();
  const published: Snapshot[] = [];
  store.onBundleChange((_changed, snapshot) => {
    published.push(snapshot);
  });
  const run = startController(source, { store, leading });
  const h: Harness = {
    store,
    controller: run.controller,
    objects: source.objects,
    get statusWrites() {
      return source.writes.map((w) => w.key);
    },
    get events() {
      return source.events.filter((e) => e.key.startsWith('Directory/'));
    },
    published,
    async put(kind, namespace, name, obj) {
      if (obj) source.objects.set(keyText({ kind, namespace, name }), obj);
      else source.objects.delete(keyText({ kind, namespace, name }));
      await run.drain([{ kind, namespace, name }]);
    },
    status: (kind, name, namespace = NS) => source.status(kind, name, namespace),
    setLeading(l) {
      run.leading = l;
    },
  };
  await run.drain();
  return h;
}

const directoryOf = (store: Store, namespace = NS) => store.snapshot().tenants.get(namespace)?.directory;
const bundleOf = (store: Store, namespace = NS) => store.snapshot().tenants.get(namespace)?.bundles.get('docs')?.built;

const input = decisionInput;

/** A decision as the HTTP handlers make it: the published index and directory of the tenant. */
function decideNow(store: Store, doc: object): boolean {
  const t = store.snapshot().tenants.get(NS);
  if (!t) throw new Error(`tenant ${NS} is not published`);
  return decide(t.index, input(doc), t.directory).allow;
}

const readRecord = (who: string, extra: Record<string, unknown> = {}) => ({
  principal: { type: 'user', id: who, ...extra },
  action: 'read',
  resource: { type: 'record', id: 'r9' },
});

describe('reconcileDirectory', () => {
  it('reports Ready with the number of entities in effect, and puts them in the published directory', async () => {
    const h = await harness([...tenantObjects(NS), directoryObj('people', PEOPLE)]);
    expect(h.status('Directory', 'people')).toMatchObject({
      phase: 'Ready',
      observedGeneration: 1,
      entityCount: 3,
      conditions: [{ type: 'Ready', status: 'True', reason: 'Loaded', message: '3 entities are in effect', observedGeneration: 1 }],
    });
    const dir = directoryOf(h.store);
    expect(dir?.size).toBe(3);
    expect(dir?.get('user', 'bob')).toEqual({ role: 'admin', email: 'bob@example.com' });
    expect(dir?.get('record', 'r1')).toEqual({ owner: 'alice', status: 'active' });
    expect(dir?.ids('user')).toEqual(['alice', 'bob']);
    expect(h.events).toEqual([]);
  });

  it('gives an entity listed by two Directories to the one whose name sorts first; the other reports Conflict naming it', async () => {
    const h = await harness([
      ...tenantObjects(NS),
      // Applied in the "wrong" order on purpose: the later name is known first.
      directoryObj('zeta', [
        { type: 'user', id: 'bob', properties: { role: 'member', email: 'bob@zeta.example' } },
        { type: 'user', id: 'dave', properties: { role: 'admin' } },
      ]),
    ]);
    expect(h.status('Directory', 'zeta')).toMatchObject({ phase: 'Ready', entityCount: 2 });
    expect(decideNow(h.store, readRecord('bob'))).toBe(false);

    await h.put('Directory', NS, 'alpha', directoryObj('alpha', PEOPLE));
    expect(h.status('Directory', 'alpha')).toMatchObject({
      phase: 'Ready',
      entityCount: 3,
      conditions: [{ type: 'Ready', status: 'True', reason: 'Loaded' }],
    });
    const zeta = h.status('Directory', 'zeta');
    expect(zeta).toMatchObject({
      phase: 'Conflict',
      entityCount: 1,
      conditions: [{ type: 'Ready', status: 'False', reason: 'DuplicateEntities' }],
    });
    const message = (zeta?.['conditions'] as { message: string }[] | undefined)?.[0]?.message;
    expect(message).toContain('user "bob" (Directory alpha)');
    expect(message).toMatch(/^1 of 2 entities/);
    expect(message).not.toContain('dave');
    expect(h.events).toEqual([{ key: `Directory/${NS}/zeta`, event: { type: 'Warning', reason: 'DuplicateEntities', message } }]);
    // alpha's bob (an admin) is in effect, zeta's dave too.
    expect(directoryOf(h.store)?.get('user', 'bob')).toEqual({ role: 'admin', email: 'bob@example.com' });
    expect(directoryOf(h.store)?.get('user', 'dave')).toEqual({ role: 'admin' });
    expect(decideNow(h.store, readRecord('bob'))).toBe(true);

    // The winner goes: the other is Ready again, and its properties take effect.
    await h.put('Directory', NS, 'alpha', undefined);
    expect(h.status('Directory', 'zeta')).toMatchObject({
      phase: 'Ready',
      entityCount: 2,
      conditions: [{ type: 'Ready', status: 'True', reason: 'Loaded', message: '2 entities are in effect' }],
    });
    expect(directoryOf(h.store)?.get('user', 'bob')).toEqual({ role: 'member', email: 'bob@zeta.example' });
    expect(directoryOf(h.store)?.get('user', 'alice')).toBeUndefined();
    expect(decideNow(h.store, readRecord('bob'))).toBe(false);
    expect(h.events).toHaveLength(1);
  });

  it('names at most five conflicting entities and counts the rest', async () => {
    const many = Array.from({ length: 7 }, (_, i) => ({ type: 'user', id: `u${i}`, properties: { role: 'member' } }));
    const h = await harness([directoryObj('a', many), directoryObj('b', [...many, { type: 'user', id: 'extra', properties: {} }])]);
    const message = (h.status('Directory', 'b')?.['conditions'] as { message: string }[] | undefined)?.[0]?.message;
    expect(h.status('Directory', 'b')).toMatchObject({ phase: 'Conflict', entityCount: 1 });
    expect(message).toMatch(/^7 of 8 entities/);
    for (const id of ['u0', 'u1', 'u2', 'u3', 'u4']) expect(message).toContain(`user "${id}" (Directory a)`);
    expect(message).not.toContain('"u5"');
    expect(message).toContain('and 2 more');
    expect(message).toMatch(/the other 1 (entity )?(is|are) in effect$/);
  });

  it.each([
    [
      'an entity listed twice',
      [
        { type: 'user', id: 'x', properties: { role: 'admin' } },
        { type: 'user', id: 'x', properties: {} },
      ],
      /spec\.entities\.2: user "x" is already listed at entities\.1/,
    ],
    [
      'a type key in properties',
      [{ type: 'user', id: 'x', properties: { role: 'admin', type: 'robot' } }],
      /spec\.entities\.1\.properties\.type: "type" is not a property/,
    ],
    [
      'an id key in properties',
      [{ type: 'user', id: 'x', properties: { role: 'admin', id: 'y' } }],
      /spec\.entities\.1\.properties\.id: "id" is not a property/,
    ],
    [
      'an integer beyond 2^53',
      [{ type: 'user', id: 'x', properties: { role: 'admin', badge: 2 ** 53 + 2 } }],
      /spec\.entities\.1\.properties\.badge: an integer beyond 2\^53 cannot be held exactly \(JSON readers round it\); write it as a string/,
    ],
    [
      'properties that are not an object',
      [{ type: 'user', id: 'x', properties: ['admin'] }],
      /spec\.entities\.1\.properties: must be an object of properties, got a list/,
    ],
    [
      'properties given as a string',
      [{ type: 'user', id: 'x', properties: 'admin' }],
      /spec\.entities\.1\.properties: must be an object of properties, got string/,
    ],
    [
      'a property named __proto__',
      [{ type: 'user', id: 'x', properties: JSON.parse('{"__proto__": {"admin": true}}') as unknown }],
      /spec\.entities\.1\.properties\.__proto__: "__proto__" cannot be a property name/,
    ],
    [
      'a property a YAML tag made into a Date',
      [{ type: 'user', id: 'x', properties: { since: new Date(0) } }],
      /spec\.entities\.1\.properties\.since: not a JSON value \(Date; a YAML tag/,
    ],
    [
      'a property a YAML tag made into bytes',
      [{ type: 'user', id: 'x', properties: { key: new Uint8Array([1]) } }],
      /spec\.entities\.1\.properties\.key: not a JSON value \(Uint8Array/,
    ],
    [
      'an id with a lone surrogate',
      [{ type: 'user', id: 'x\ud800', properties: {} }],
      /spec\.entities\.1\.id: must be well-formed Unicode/,
    ],
  ])('puts none of a Directory with %s in effect, and says why', async (_name, bad, reason) => {
    const good = { type: 'user', id: 'bob', properties: { role: 'admin' } };
    const h = await harness([...tenantObjects(NS), directoryObj('people', [good, ...bad])]);
    const status = h.status('Directory', 'people');
    expect(status).toMatchObject({
      phase: 'Invalid',
      observedGeneration: 1,
      entityCount: 0,
      conditions: [{ type: 'Ready', status: 'False', reason: 'InvalidSpec' }],
    });
    const message = (status?.['conditions'] as { message: string }[] | undefined)?.[0]?.message ?? '';
    expect(message).toMatch(reason);
    expect(message).toMatch(/none of its entities are in effect$/);
    // Not even the valid entity of it.
    expect(directoryOf(h.store)?.size ?? 0).toBe(0);
    expect(decideNow(h.store, readRecord('bob'))).toBe(false);
    expect(h.events).toEqual([{ key: `Directory/${NS}/people`, event: { type: 'Warning', reason: 'InvalidSpec', message } }]);
  });

  it("takes a valid Directory out of effect when an edit makes it invalid, and the other Directory's entity then wins", async () => {
    const h = await harness([
      ...tenantObjects(NS),
      directoryObj('a', [{ type: 'user', id: 'bob', properties: { role: 'admin' } }]),
      directoryObj('b', [{ type: 'user', id: 'bob', properties: { role: 'member' } }]),
    ]);
    expect(h.status('Directory', 'b')).toMatchObject({ phase: 'Conflict', entityCount: 0 });
    expect(decideNow(h.store, readRecord('bob'))).toBe(true);
    await h.put(
      'Directory',
      NS,
      'a',
      directoryObj('a', [{ type: 'user', id: 'bob', properties: { role: 'admin', id: 'bob' } }], { generation: 2 }),
    );
    expect(h.status('Directory', 'a')).toMatchObject({ phase: 'Invalid', observedGeneration: 2, entityCount: 0 });
    expect(h.status('Directory', 'b')).toMatchObject({ phase: 'Ready', entityCount: 1 });
    expect(directoryOf(h.store)?.get('user', 'bob')).toEqual({ role: 'member' });
    expect(decideNow(h.store, readRecord('bob'))).toBe(false);
  });
});

describe('a Directory change and the bundles', () => {
  const withRole = (role: string, email = 'bob@example.com'): Entity[] => [
    { type: 'user', id: 'bob', properties: { role, email } },
    PEOPLE[2] as Entity,
  ];

  it("rebuilds the tenant's bundles in the same drain: the revision moves exactly when a property a rule reads changes", async () => {
    const h = await harness([...tenantObjects(NS), ...tenantObjects(OTHER), directoryObj('people', withRole('member'))]);
    const first = bundleOf(h.store);
    expect(first?.revision).toBe(1);
    expect(first?.rego).toContain('"bob": {"role": "member"}');
    expect(first?.rego).toContain('"r1": {"owner": "alice"}');
    expect(first?.rego).not.toContain('bob@example.com');
    expect(h.status('Bundle', 'docs')).toMatchObject({ revision: 1 });

    // A property a rule reads: only the Directory's key is queued, the bundle follows in the same
    // drain, so no snapshot is ever published with the new directory and the old bundle.
    const before = h.published.length;
    await h.put('Directory', NS, 'people', directoryObj('people', withRole('admin'), { generation: 2 }));
    const second = bundleOf(h.store);
    expect(second?.revision).toBe(2);
    expect(second?.rego).toContain('"bob": {"role": "admin"}');
    expect(second?.rego).not.toContain('"member"');
    expect(h.published.length).toBe(before + 1);
    expect(h.published.at(-1)?.tenants.get(NS)?.bundles.get('docs')?.built.revision).toBe(2);
    expect(h.status('Bundle', 'docs')).toMatchObject({ revision: 2, digest: second?.digest });

    // A property no rule reads: the directory changes, the bundle's bytes and revision do not.
    await h.put('Directory', NS, 'people', directoryObj('people', withRole('admin', 'bob@new.example'), { generation: 3 }));
    expect(directoryOf(h.store)?.get('user', 'bob')).toEqual({ role: 'admin', email: 'bob@new.example' });
    expect(bundleOf(h.store)?.revision).toBe(2);
    expect(bundleOf(h.store)?.digest).toBe(second?.digest);
    expect(h.status('Directory', 'people')).toMatchObject({ phase: 'Ready', observedGeneration: 3 });

    // A Directory of another tenant: this tenant's bundle stays as it was (the same entry).
    const otherBefore = bundleOf(h.store, OTHER);
    const ours = h.store.snapshot().tenants.get(NS)?.bundles.get('docs');
    await h.put('Directory', OTHER, 'people', directoryObj('people', withRole('admin'), { namespace: OTHER }));
    expect(h.store.snapshot().tenants.get(NS)?.bundles.get('docs')).toBe(ours);
    expect(bundleOf(h.store)?.revision).toBe(2);
    // ... while that tenant's own bundle embeds its new directory.
    expect(otherBefore?.revision).toBe(1);
    expect(bundleOf(h.store, OTHER)?.revision).toBe(2);
    expect(bundleOf(h.store, OTHER)?.rego).toContain('"bob": {"role": "admin"}');

    // Removing the Directory removes the embedded data: the revision moves again.
    await h.put('Directory', NS, 'people', undefined);
    expect(bundleOf(h.store)?.revision).toBe(3);
    expect(bundleOf(h.store)?.rego).not.toContain('acl_directory');
    expect(directoryOf(h.store)?.size ?? 0).toBe(0);
  });

  it("decides with the new properties as soon as they are published, the request's own properties winning", async () => {
    const h = await harness([...tenantObjects(NS), directoryObj('people', withRole('member'))]);
    expect(decideNow(h.store, readRecord('bob'))).toBe(false);
    expect(decideNow(h.store, readRecord('bob', { role: 'admin' }))).toBe(true);
    // The resource's owner comes from the directory too.
    expect(decideNow(h.store, { principal: { type: 'user', id: 'alice' }, action: 'read', resource: { type: 'record', id: 'r1' } })).toBe(
      true,
    );
    expect(
      decideNow(h.store, {
        principal: { type: 'user', id: 'alice' },
        action: 'read',
        resource: { type: 'record', id: 'r1', owner: 'carol' },
      }),
    ).toBe(false);

    await h.put('Directory', NS, 'people', directoryObj('people', withRole('admin'), { generation: 2 }));
    expect(decideNow(h.store, readRecord('bob'))).toBe(true);
    expect(decideNow(h.store, readRecord('bob', { role: 'member' }))).toBe(false);
  });
});

describe('a follower', () => {
  it('puts the entities in effect (and decides with them) but writes no status and records no event', async () => {
    const h = await harness(
      [
        ...tenantObjects(NS),
        directoryObj('a', [{ type: 'user', id: 'bob', properties: { role: 'admin' } }]),
        directoryObj('b', [{ type: 'user', id: 'bob', properties: { role: 'member' } }]),
        directoryObj('broken', [{ type: 'user', id: 'carol', properties: { role: 'admin', type: 'x' } }]),
      ],
      false,
    );
    expect(h.statusWrites).toEqual([]);
    expect(h.events).toEqual([]);
    expect(h.status('Directory', 'a')).toBeUndefined();
    expect(directoryOf(h.store)?.get('user', 'bob')).toEqual({ role: 'admin' });
    expect(directoryOf(h.store)?.get('user', 'carol')).toBeUndefined();
    expect(decideNow(h.store, readRecord('bob'))).toBe(true);
    expect(decideNow(h.store, readRecord('carol'))).toBe(false);

    await h.put('Directory', NS, 'a', undefined);
    expect(directoryOf(h.store)?.get('user', 'bob')).toEqual({ role: 'member' });
    expect(decideNow(h.store, readRecord('bob'))).toBe(false);
    expect(h.statusWrites).toEqual([]);

    // Once it leads, it writes the statuses it computed.
    h.setLeading(true);
    await h.put('Directory', NS, 'b', h.objects.get(`Directory/${NS}/b`));
    expect(h.status('Directory', 'b')).toMatchObject({ phase: 'Ready', entityCount: 1 });
  });
});

describe('a Directory edit of one entity among many', () => {
  it('keeps every other entity as it was read before (only the changed one is read again)', async () => {
    const many: Entity[] = Array.from({ length: 500 }, (_, i) => ({
      type: 'user',
      id: `u${i}`,
      properties: { role: i % 3 === 0 ? 'admin' : 'member' },
    }));
    const h = await harness([...tenantObjects(NS), directoryObj('people', many)]);
    const before = h.store.draft.directoryEntities(NS, 'people') ?? [];
    const edited = many.map((e, i) =>
      i === 250 ? { ...e, properties: { role: 'admin' } } : { ...e, properties: { ...(e.properties as object) } },
    );
    await h.put('Directory', NS, 'people', directoryObj('people', edited, { generation: 2 }));
    const after = h.store.draft.directoryEntities(NS, 'people') ?? [];
    expect(after).toHaveLength(500);
    expect(after.filter((e, i) => e !== before[i]).map((e) => e.id)).toEqual(['u250']);
    expect(directoryOf(h.store)?.get('user', 'u250')).toEqual({ role: 'admin' });
    expect(decideNow(h.store, readRecord('u250'))).toBe(true);
    expect(h.status('Directory', 'people')).toMatchObject({ phase: 'Ready', observedGeneration: 2, entityCount: 500 });
  });
});
