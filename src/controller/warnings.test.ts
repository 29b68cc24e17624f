// Lint in the controller: the Warning condition on objects with findings (and none on the others),
// one Warning Event and one log line per finding that appears, statuses that follow a change of
// another object, and nothing written twice: not on a second drain, a restart, or by a follower.
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { fakeSource, NS, sourceObject, startController } from '../../test/support/controller.ts';
import { rng } from '../../test/support/corpus.ts';
import { keyText, type ClusterWriter, type Kind, type ObjectEvent, type SourceObject } from './types.ts';

const object = (kind: Kind, name: string, spec: unknown, generation = 1): SourceObject => sourceObject(kind, name, spec, { generation });
const rule = (name: string, spec: Record<string, unknown> = {}, generation = 1): SourceObject =>
  object('Rule', name, { state: 'Enforced', subjectType: 'user', actions: ['read'], resourceType: 'document', ...spec }, generation);

/** A tenant without findings: one Connector, one Bundle of every rule, one rule. */
const cleanTenant = (): SourceObject[] => [
  object('Connector', 'gateways', {}),
  object('Bundle', 'all', { connector: 'gateways' }),
  rule('team', { condition: 'principal.team == resource.team' }),
];

type Status = { conditions?: { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }[] };

interface Harness {
  readonly objects: Map<string, SourceObject>;
  readonly writes: string[];
  /** Warning Events. */
  readonly events: { key: string; event: ObjectEvent }[];
  readonly logs: Record<string, unknown>[];
  /** Puts (or removes) objects and drains their keys. */
  put(...objs: (SourceObject | { kind: Kind; name: string; gone: true })[]): Promise<void>;
  /** Every key again (a resync, or a new leader's first pass). */
  resync(): Promise<void>;
  status(kind: Kind, name: string): Status;
  warning(kind: Kind, name: string): NonNullable<Status['conditions']>[number] | undefined;
  setLeading(leading: boolean): void;
  /** Status writes fail (and are retried) while true. */
  failWrites(fail: boolean): void;
}

const textOf = (kind: Kind, name: string): string => keyText({ kind, namespace: NS, name });

async function harness(
  initial: SourceObject[],
  options: { leading?: boolean; lint?: boolean; failEvents?: boolean } = {},
): Promise<Harness> {
  const source = fakeSource(initial);
  const logs: Record<string, unknown>[] = [];
  const writer: ClusterWriter = {
    ...source.writer,
    recordEvent(obj, event) {
      if (options.failEvents && event.type === 'Warning') throw new Error('the Events API is away');
      source.writer.recordEvent?.(obj, event);
    },
  };
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const run = startController(source, {
    writer,
    log: pino({ level: 'warn' }, sink),
    leading: options.leading ?? true,
    lint: options.lint ?? true,
    retryMs: 1,
    maxRetryMs: 1,
  });
  await run.drain();
  const h: Harness = {
    objects: source.objects,
    get writes() {
      return source.writes.map((w) => keyText(w.key));
    },
    // Warnings only: tokens issued and bundles built are not under test.
    get events() {
      return source.events.filter((e) => e.event.type === 'Warning');
    },
    logs,
    async put(...objs) {
      for (const o of objs) {
        const key = 'gone' in o ? textOf(o.kind, o.name) : textOf(o.kind, o.metadata.name);
        const status = source.objects.get(key)?.raw['status'];
        if ('gone' in o) source.objects.delete(key);
        // A new spec keeps the status recorded, as in both sources.
        else source.objects.set(key, status === undefined ? o : { ...o, raw: { ...o.raw, status } });
      }
      await run.drain(objs.map((o) => ({ kind: o.kind, namespace: NS, name: 'gone' in o ? o.name : o.metadata.name })));
    },
    resync: () => run.drain(),
    status: (kind, name) => (source.status(kind, name) ?? {}) as Status,
    warning: (kind, name) => h.status(kind, name).conditions?.find((c) => c.type === 'Warning'),
    setLeading(l) {
      run.leading = l;
    },
    failWrites(fail) {
      source.failWrites = fail;
    },
  };
  return h;
}

describe('a lint pass that fails', () => {
  it('is logged, and the drain still writes its statuses (without Warning conditions)', async () => {
    const h = await harness([...cleanTenant(), rule('can-read-own', { condition: 'resource.properties.ownerID == principal.id' })], {
      failEvents: true,
    });
    expect(h.status('Rule', 'can-read-own').conditions?.find((c) => c.type === 'Ready')?.reason).toBe('Enforced');
    expect(h.warning('Rule', 'can-read-own')).toBeUndefined();
    expect(h.logs).toContainEqual(
      expect.objectContaining({ level: 50, msg: 'Failed to lint; statuses are written without Warning conditions' }),
    );
  });
});

const lintLogs = (h: Harness): Record<string, unknown>[] => h.logs.filter((l) => l['msg'] === 'Found a lint finding');

describe('lint in the controller', () => {
  it('puts a Warning condition on a rule reading principal.properties, with one Event and one log line', async () => {
    const h = await harness([...cleanTenant(), rule('can-read-own', { condition: 'resource.properties.ownerID == principal.id' })]);
    expect(h.warning('Rule', 'can-read-own')).toMatchObject({
      type: 'Warning',
      status: 'True',
      reason: 'PropertiesPath',
      message: expect.stringMatching(
        /^PropertiesPath: the condition reads resource\.properties\.ownerID, .* Fix: read resource\.ownerID instead$/,
      ),
    });
    expect(h.events).toEqual([
      {
        key: 'Rule/acme/can-read-own',
        event: { type: 'Warning', reason: 'PropertiesPath', message: expect.stringContaining('read resource.ownerID instead') },
      },
    ]);
    expect(lintLogs(h)).toEqual([
      expect.objectContaining({ level: 40, code: 'PropertiesPath', kind: 'Rule', namespace: NS, name: 'can-read-own' }),
    ]);
    // Clean objects carry no Warning condition.
    for (const [kind, name] of [
      ['Rule', 'team'],
      ['Bundle', 'all'],
      ['Connector', 'gateways'],
    ] as const) {
      expect(h.status(kind, name).conditions?.length).toBeGreaterThan(0);
      expect(h.warning(kind, name)).toBeUndefined();
    }
  });

  it('writes nothing and reports nothing again when nothing changed', async () => {
    const h = await harness([...cleanTenant(), rule('can-read-own', { condition: 'principal.properties.email == "x"' })]);
    const [writes, events] = [h.writes.length, h.events.length];
    await h.resync();
    expect(h.writes.length).toBe(writes);
    expect(h.events.length).toBe(events);
    expect(lintLogs(h)).toHaveLength(1);
  });

  it('removes the condition once the rule is fixed, and reports a finding that appears again', async () => {
    const h = await harness([...cleanTenant(), rule('can-read-own', { condition: 'principal.properties.email == "x"' })]);
    const was = h.warning('Rule', 'can-read-own');
    await h.put(rule('can-read-own', { condition: 'principal.email == "x"' }, 2));
    expect(h.warning('Rule', 'can-read-own')).toBeUndefined();
    expect(h.status('Rule', 'can-read-own').conditions?.map((c) => c.type)).toEqual(['Ready']);
    expect(h.events).toHaveLength(1);
    await h.put(rule('can-read-own', { condition: 'principal.properties.email == "x"' }, 3));
    expect(h.warning('Rule', 'can-read-own')?.message).toBe(was?.message);
    expect(h.events).toHaveLength(2);
  });

  it('lists every finding of an object in its message, the first one as reason, and reports only the one that is new', async () => {
    const h = await harness([
      ...cleanTenant(),
      object('Rule', 'loose', { subjectType: 'user', actions: ['read'], resourceType: 'document' }),
    ]);
    expect(h.warning('Rule', 'loose')).toMatchObject({ reason: 'StateNotSet' });
    const since = h.warning('Rule', 'loose')?.lastTransitionTime;
    await h.put(
      object(
        'Rule',
        'loose',
        { subjectType: 'user', actions: ['read'], resourceType: 'document', condition: 'principal.properties.a == 1' },
        2,
      ),
    );
    const w = h.warning('Rule', 'loose');
    expect(w?.reason).toBe('PropertiesPath');
    expect(w?.message?.split('; ').map((m) => m.split(':')[0])).toEqual(['PropertiesPath', 'StateNotSet']);
    // Still True: the condition did not transition.
    expect(w?.lastTransitionTime).toBe(since);
    expect(h.events.map((e) => e.event.reason)).toEqual(['StateNotSet', 'PropertiesPath']);
  });

  it("rewrites the status of an object whose findings changed because of another object's change", async () => {
    const h = await harness([
      object('Connector', 'gateways', {}),
      object('Bundle', 'docs', { connector: 'gateways', entityTypes: ['document'] }),
      rule('docs-rule'),
      rule('reports-rule', { resourceType: 'report' }),
    ]);
    expect(h.warning('Rule', 'reports-rule')?.reason).toBe('RuleNotBundled');
    const writes = h.writes.length;
    // A Bundle of every rule: the rule is selected now, though it was not reconciled.
    await h.put(object('Bundle', 'all', { connector: 'gateways' }));
    expect(h.warning('Rule', 'reports-rule')).toBeUndefined();
    expect(h.writes.slice(writes)).toContain('Rule/acme/reports-rule');
    // And back when the Bundle goes.
    await h.put({ kind: 'Bundle', name: 'all', gone: true });
    expect(h.warning('Rule', 'reports-rule')?.reason).toBe('RuleNotBundled');
    expect(h.events.filter((e) => e.key === 'Rule/acme/reports-rule')).toHaveLength(2);
  });

  it('reports a finding once while its status cannot be written', async () => {
    const h = await harness(cleanTenant());
    h.failWrites(true);
    await h.put(rule('can-read-own', { condition: 'principal.properties.email == "x"' }));
    await h.resync();
    expect(h.warning('Rule', 'can-read-own')).toBeUndefined();
    h.failWrites(false);
    await h.resync();
    expect(h.warning('Rule', 'can-read-own')?.reason).toBe('PropertiesPath');
    expect(h.events).toHaveLength(1);
  });

  it('leaves invalid objects to their Ready condition', async () => {
    const h = await harness([...cleanTenant(), rule('broken', { condition: 'principal.properties.a +' })]);
    expect(h.status('Rule', 'broken').conditions?.map((c) => [c.type, c.reason])).toEqual([['Ready', 'InvalidSpec']]);
  });

  it('writes and reports nothing as a follower; a new leader reports only what status does not record yet', async () => {
    const h = await harness([...cleanTenant(), rule('can-read-own', { condition: 'principal.properties.email == "x"' })], {
      leading: false,
    });
    expect(h.writes).toEqual([]);
    expect(h.events).toEqual([]);
    h.setLeading(true);
    await h.resync();
    expect(h.warning('Rule', 'can-read-own')?.reason).toBe('PropertiesPath');
    expect(h.events).toHaveLength(1);
    // A restart (a controller that remembers nothing) over the statuses written: no second Event.
    const again = await harness([...h.objects.values()]);
    expect(again.events).toEqual([]);
    expect(again.writes).toEqual([]);
  });

  it('is off unless asked for', async () => {
    const h = await harness([...cleanTenant(), rule('can-read-own', { condition: 'principal.properties.email == "x"' })], { lint: false });
    expect(h.warning('Rule', 'can-read-own')).toBeUndefined();
    expect(h.events).toEqual([]);
  });
});

describe('a lint pass that reuses what did not change', () => {
  it('gives every object the Warning condition a cold start gives it, after each of 60 random edits in a row', async () => {
    const random = rng(2026);
    const pick = (n: number): number => Math.floor(random() * n);
    // Conditions with and without findings (PropertiesPath, NegatedMissing), a rule left a Draft, a robot's rule.
    const specs: Record<string, unknown>[] = [
      { condition: 'principal.team == resource.team' },
      { condition: 'resource.properties.ownerID == principal.id' },
      { condition: '!(principal.level > 3)' },
      { state: undefined, condition: 'principal.team == "red"' },
      { subjectType: 'robot' },
    ];
    // The robots' Bundle selects no rule unless one is a robot's: a finding of one object that follows others.
    const h = await harness([...cleanTenant(), object('Bundle', 'robots', { connector: 'gateways', entityTypes: ['robot'] })]);
    const generations = new Map<string, number>();
    for (let step = 0; step < 60; step++) {
      const name = `r${pick(6)}`;
      const generation = (generations.get(name) ?? 0) + 1;
      generations.set(name, generation);
      await h.put(pick(8) === 0 ? { kind: 'Rule', name, gone: true } : rule(name, specs[pick(specs.length)], generation));
      const cold = await harness([...h.objects.values()].map((o) => ({ ...o, raw: { ...o.raw, status: undefined } })));
      const warnings = (x: Harness): unknown[] =>
        [...h.objects.values()].map((o) => {
          const w = x.warning(o.kind, o.metadata.name);
          return [o.kind, o.metadata.name, w?.reason, w?.message];
        });
      expect(warnings(h), `step ${step}`).toEqual(warnings(cold));
    }
  });
});
