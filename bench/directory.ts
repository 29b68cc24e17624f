// One tenant with many Directories, through the real controller and store: how long the first load
// and one edit (a property a rule reads) take until published, bundle rebuild included.
import { pino } from 'pino';
import { createController } from '../src/controller/controller.ts';
import type { Kind, SourceObject } from '../src/controller/types.ts';
import { createStore } from '../src/store/index.ts';

export interface DirectoryLoad {
  readonly firstLoadMs: number;
  readonly editMs: number;
  readonly regoBytes: number;
  readonly entities: number;
}

export async function directoryLoad(directories: number, perDirectory: number): Promise<DirectoryLoad> {
  const ns = 'acme';
  const obj = (kind: Kind, name: string, spec: Record<string, unknown>, generation = 1): SourceObject => ({
    kind,
    metadata: { name, namespace: ns, generation },
    raw: { apiVersion: 'acl.policyagent.dev/v1alpha1', kind, metadata: { name, namespace: ns, generation }, spec },
  });
  const entities = (d: number, team0: string): unknown[] =>
    Array.from({ length: perDirectory }, (_, i) => ({
      type: 'user',
      id: `u-${d}-${i}`,
      properties: { team: i === 0 ? team0 : i % 7 === 0 ? 'blue' : 'red', email: `u${i}@example.com` },
    }));
  const objects = new Map<string, SourceObject>();
  const put = (o: SourceObject): void => {
    objects.set(`${o.kind}/${o.metadata.name}`, o);
  };
  put(
    obj('Rule', 'r', {
      state: 'Enforced',
      subjectType: 'user',
      actions: ['read'],
      resourceType: 'doc',
      condition: 'principal.team == resource.team',
    }),
  );
  put(obj('Connector', 'c', {}));
  put(obj('Bundle', 'b', { connector: 'c' }));
  for (let d = 0; d < directories; d++) put(obj('Directory', `dir-${String(d).padStart(4, '0')}`, { entities: entities(d, 'red') }));
  const store = createStore();
  const controller = createController({
    objects: { get: (k, _n, m) => objects.get(`${k}/${m}`), list: (k) => [...objects.values()].filter((o) => o.kind === k) },
    writer: {
      readTokenSecret: () => undefined,
      writeTokenSecret: async () => {},
      deleteTokenSecret: async () => {},
      writeStatus: async () => {},
    },
    store,
    log: pino({ level: 'silent' }),
  });
  const t0 = performance.now();
  for (const o of objects.values()) controller.enqueue({ kind: o.kind, namespace: ns, name: o.metadata.name });
  await controller.settled();
  const firstLoadMs = performance.now() - t0;
  await controller.idle();
  put(obj('Directory', 'dir-0000', { entities: entities(0, 'green') }, 2));
  const t1 = performance.now();
  controller.enqueue({ kind: 'Directory', namespace: ns, name: 'dir-0000' });
  await controller.settled();
  const editMs = performance.now() - t1;
  await controller.idle();
  const tenant = store.snapshot().tenants.get(ns);
  const bundle = tenant?.bundles.get('b');
  if (bundle?.built.revision !== 2) throw new Error(`the edit did not reach the bundle (revision ${String(bundle?.built.revision)})`);
  return { firstLoadMs, editMs, regoBytes: Buffer.byteLength(bundle.built.rego), entities: tenant?.directory.size ?? 0 };
}
