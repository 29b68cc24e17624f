import { describe, expect, it } from 'vitest';
import { buildDirectory, type DirectoryEntity, type EntityDirectory } from '../policy/index.ts';
import { createActivityLog, createStore } from './index.ts';

describe('createStore', () => {
  it('shows nothing until publish, and each publish is a new immutable snapshot', () => {
    const store = createStore();
    const first = store.snapshot();
    store.draft.setConnector('acme', 'c', { tenant: 'acme', name: 'c', active: true, tokenHash: 'h1' });
    expect(store.snapshot()).toBe(first);
    store.publish();
    const second = store.snapshot();
    expect(second.version).toBe(first.version + 1);
    expect(second.tokens.get('h1')?.name).toBe('c');
    expect(first.tenants.size).toBe(0);
    expect(store.publish()).toEqual([]);
    expect(store.snapshot()).toBe(second);
  });

  it('tells its listeners which tenants each publish changed', () => {
    const store = createStore();
    const heard: string[][] = [];
    store.onBundleChange((_changed, _snapshot, tenants) => heard.push([...tenants].sort()));
    store.draft.setConnector('acme', 'c', { tenant: 'acme', name: 'c', active: true, tokenHash: 'h1' });
    store.draft.setConnector('records', 'c', { tenant: 'records', name: 'c', active: true, tokenHash: 'h2' });
    store.publish();
    store.draft.setConnector('records', 'c', undefined);
    store.publish();
    store.draft.setApiKey('acme', 'k', 'hash');
    store.publish();
    expect(heard).toEqual([['acme', 'records'], ['records'], []]);
  });

  it('keeps API keys by hash with their tenant', () => {
    const store = createStore();
    store.draft.setApiKey('acme', 'k', 'hash');
    store.publish();
    expect(store.snapshot().apiKeys.get('hash')).toEqual({ tenant: 'acme', secret: 'k' });
    store.draft.setApiKey('acme', 'k', undefined);
    store.publish();
    expect(store.snapshot().apiKeys.size).toBe(0);
  });
});

describe('retired tokens', () => {
  const entry = (hash: string | undefined) => ({ tenant: 'acme', name: 'c', active: true, tokenHash: hash });

  it('remembers the last few tokens a connector had, never as keys, and forgets them with the connector', () => {
    const store = createStore();
    for (const h of ['h1', 'h2', 'h3', 'h4', 'h5', 'h6']) {
      store.draft.setConnector('acme', 'c', entry(h));
      store.publish();
    }
    const s = store.snapshot();
    expect([...s.tokens.keys()]).toEqual(['h6']);
    expect([...s.retiredTokens.keys()]).toEqual(['h5', 'h4', 'h3', 'h2']);
    expect(s.retiredTokens.get('h2')).toMatchObject({ name: 'c', tokenHash: 'h6' });
    // Revoked: the last token joins the retired ones.
    store.draft.setConnector('acme', 'c', entry(undefined));
    store.publish();
    expect([...store.snapshot().retiredTokens.keys()]).toEqual(['h6', 'h5', 'h4', 'h3']);
    store.draft.setConnector('acme', 'c', undefined);
    store.publish();
    expect(store.snapshot().retiredTokens.size).toBe(0);
  });
});

describe('createActivityLog', () => {
  const time = (i: number): string => `2026-01-01T00:00:${String(i).padStart(2, '0')}.000Z`;
  const record = (status: number, i: number) => ({
    timeMs: Date.parse(time(i)),
    revision: 1,
    clientIp: '1.2.3.4',
    userAgent: 'opa',
    status,
  });
  const written = (status: number, i: number) => ({ time: time(i), revision: 1, clientIp: '1.2.3.4', userAgent: 'opa', status });

  it('keeps the newest records up to its capacity, newest first', () => {
    const log = createActivityLog(3);
    for (let i = 0; i < 5; i++) log.record('t/b', record(200, i));
    expect(log.list('t/b').map((r) => r.time.slice(17, 19))).toEqual(['04', '03', '02']);
    expect(log.takeChanged()).toEqual(['t/b']);
    expect(log.takeChanged()).toEqual([]);
  });

  it('takes the last sync from 200 and 304 answers only', () => {
    const log = createActivityLog();
    log.record('t/b', record(200, 1));
    log.record('t/b', record(401, 2));
    expect(log.lastSync('t/b')).toBe(time(1));
    log.record('t/b', record(304, 3));
    expect(log.lastSync('t/b')).toBe(time(3));
  });

  it('counts the records of each bundle, restored ones aside, from zero again once forgotten', () => {
    const log = createActivityLog(3);
    log.restore('t/a', [written(200, 1)]);
    for (let i = 0; i < 5; i++) log.record('t/a', record(200, i));
    log.record('t/b', record(304, 9));
    expect([log.countOf('t/a'), log.countOf('t/b'), log.countOf('t/c'), log.count()]).toEqual([5, 1, 0, 6]);
    log.forget('t/a');
    expect([log.countOf('t/a'), log.count()]).toEqual([0, 6]);
  });

  it('restores records written out before a restart', () => {
    const log = createActivityLog(10);
    log.restore('t/b', [written(304, 2), written(200, 1)]);
    expect(log.list('t/b').map((r) => r.status)).toEqual([304, 200]);
    expect(log.lastSync('t/b')).toBe(time(2));
  });
});

describe('the entity directory under Directory edits', () => {
  it('is updated to what a whole build gives, edit after edit (entities changed, added, removed, moved between Directories)', () => {
    const store = createStore();
    let seed = 11;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const lists = new Map<string, DirectoryEntity[]>();
    const make = (): DirectoryEntity[] => {
      const ids = new Set(Array.from({ length: 1 + rand(40) }, () => `u${rand(60)}`));
      return [...ids].map((id) => ({ type: rand(5) === 0 ? 'group' : 'user', id, properties: { team: `t${rand(3)}`, n: rand(4) } }));
    };
    const view = (d: EntityDirectory): unknown => ({
      size: d.size,
      types: d.types(),
      ids: d.types().map((t) => d.ids(t)),
      props: d.types().flatMap((t) => d.ids(t).map((id) => [t, id, d.get(t, id)])),
    });
    for (let round = 0; round < 60; round++) {
      const name = `dir-${rand(4)}`;
      const entities = rand(6) === 0 ? undefined : make();
      if (entities) lists.set(name, entities);
      else lists.delete(name);
      store.draft.setDirectoryEntities('acme', name, entities);
      // Some rounds publish (the directory is made), some edit again first.
      if (rand(3) !== 0) store.publish();
      const whole = buildDirectory([...lists.keys()].sort().flatMap((n) => lists.get(n) ?? []));
      expect(view(store.draft.directory('acme'))).toEqual(view(whole));
    }
  });

  it('keeps the properties object of an entity whose properties did not change', () => {
    const store = createStore();
    const first = [
      { type: 'user', id: 'a', properties: { team: 'x' } },
      { type: 'user', id: 'b', properties: { team: 'y' } },
    ];
    store.draft.setDirectoryEntities('acme', 'd', first);
    const before = store.draft.directory('acme');
    store.publish();
    store.draft.setDirectoryEntities('acme', 'd', [
      { type: 'user', id: 'a', properties: { team: 'x' } },
      { type: 'user', id: 'b', properties: { team: 'z' } },
    ]);
    const after = store.draft.directory('acme');
    expect(after.get('user', 'a')).toBe(before.get('user', 'a'));
    expect(after.get('user', 'b')).toEqual({ team: 'z' });
    expect(before.get('user', 'b')).toEqual({ team: 'y' });
  });
});
