// Reading a Directory's entities again after an edit (entities.ts) gives exactly what reading the
// object whole gives, for long seeded runs of edits: entities changed, added, removed, moved, made
// invalid or repeated, and the description changed.
import { describe, expect, it } from 'vitest';
import { rng } from '../../test/support/corpus.ts';
import type { DirectoryEntity } from '../policy/index.ts';
import { factsOf, rememberDirectoryFacts } from '../lint/facts.ts';
import { readEntities } from './entities.ts';

type RawEntity = Record<string, unknown>;

function directory(entities: readonly unknown[], description: string): Record<string, unknown> {
  return {
    apiVersion: 'acl.policyagent.dev/v1alpha1',
    kind: 'Directory',
    metadata: { name: 'people', namespace: 'acme' },
    spec: { description, entities },
  };
}

/** A copy as a fresh read of the file gives it: the same JSON, new objects. */
const fresh = <T>(v: T): T => structuredClone(v);

const VALUES: readonly unknown[] = ['red', 'blue', 1, -0, 0, 2.5, true, null, ['a', 'b'], { nested: 'x' }, 'lone \ud800', 2 ** 60];

function editEntities(list: RawEntity[], next: () => number, n: number): RawEntity[] {
  const out = [...list];
  const pick = (): number => Math.floor(next() * out.length);
  const value = (): unknown => VALUES[Math.floor(next() * VALUES.length)];
  const r = next();
  if (r < 0.35 && out.length > 0) {
    const i = pick();
    const e = out[i] as RawEntity;
    out[i] = { ...e, properties: { ...(e['properties'] as object), team: value() } };
  } else if (r < 0.5) out.splice(pick(), 0, { type: next() < 0.8 ? 'user' : 'group', id: `e${n}`, properties: { team: value() } });
  else if (r < 0.6 && out.length > 0) out.splice(pick(), 1);
  else if (r < 0.68 && out.length > 1) {
    const [moved] = out.splice(pick(), 1);
    out.splice(pick(), 0, moved as RawEntity);
  } else if (r < 0.74 && out.length > 0)
    out.push({ ...(out[pick()] as RawEntity) }); // repeated
  else if (r < 0.8 && out.length > 0) {
    const i = pick();
    out[i] = { ...(out[i] as RawEntity), [['extra', 'id', 'type'][Math.floor(next() * 3)] as string]: next() < 0.5 ? 7 : 'Not A Type!' };
  } else if (r < 0.85 && out.length > 0) {
    const i = pick();
    out[i] = { ...(out[i] as RawEntity), properties: next() < 0.5 ? ['not', 'an', 'object'] : { type: 'x' } };
  } else if (r < 0.9 && out.length > 0) {
    const i = pick();
    const { properties: _, ...rest } = out[i] as RawEntity;
    out[i] = rest; // no properties: {} by default
  } else if (out.length > 0) {
    // A repair: an invalid entity made valid again.
    const i = pick();
    const e = out[i] as RawEntity;
    out[i] = { type: 'user', id: typeof e['id'] === 'string' ? e['id'] : `r${n}`, properties: { team: 'red' } };
  }
  return out;
}

/** Each entity valid (a bad one rewritten in place), repeats dropped: a user fixing the file. */
function repaired(list: readonly RawEntity[]): RawEntity[] {
  const seen = new Set<string>();
  const out: RawEntity[] = [];
  list.forEach((e, i) => {
    const ok =
      typeof e['type'] === 'string' &&
      /^[a-z]+$/.test(e['type']) &&
      typeof e['id'] === 'string' &&
      Object.keys(e).every((k) => ['type', 'id', 'properties'].includes(k));
    const props = e['properties'];
    const propsOk =
      props === undefined ||
      (typeof props === 'object' &&
        props !== null &&
        !Array.isArray(props) &&
        !('type' in props) &&
        !Object.values(props).includes(2 ** 60));
    const fixed =
      ok && propsOk ? e : { type: 'user', id: typeof e['id'] === 'string' ? e['id'] : `fixed${i}`, properties: { team: 'red' } };
    const key = `${String(fixed['type'])}/${String(fixed['id'])}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(fixed);
  });
  return out;
}

const plain = (es: readonly DirectoryEntity[] | undefined): unknown =>
  es?.map((e) => ({ type: e.type, id: e.id, properties: e.properties }));

describe('a Directory read again after edits', () => {
  it.each([1, 2, 3, 4])('equals the object read whole, over 300 edits in a row (seed %i)', (seed) => {
    const next = rng(seed);
    let list: RawEntity[] = Array.from({ length: 40 }, (_, i) => ({
      type: 'user',
      id: `u${i}`,
      properties: { team: i % 2 ? 'red' : 'blue', n: i },
    }));
    let description = 'people';
    let before: readonly DirectoryEntity[] | undefined;
    let valid = 0;
    let invalid = false;
    for (let n = 0; n < 300; n++) {
      // After an invalid version, usually the user's fix: every entity made valid, repeats dropped.
      list = invalid && next() < 0.6 ? repaired(list) : editEntities(list, next, n);
      if (next() < 0.1) description = next() < 0.2 ? 'x'.repeat(5000) : `people ${n}`;
      const raw = fresh(directory(list, description));
      const again = readEntities(raw, before);
      const whole = readEntities(fresh(raw), undefined);
      expect(again.problem).toBe(whole.problem);
      expect(plain(again.entities)).toEqual(plain(whole.entities));
      if (again.entities && before) {
        // An entity equal to one read before is that object: the store and the Rego recognise it.
        const known = new Map(before.map((e) => [`${e.type}/${e.id}`, e]));
        for (const e of again.entities) {
          const was = known.get(`${e.type}/${e.id}`);
          if (
            was &&
            JSON.stringify(was.properties) === JSON.stringify(e.properties) &&
            Object.is(was.properties['team'], e.properties['team'])
          )
            expect(e).toBe(was);
        }
      }
      if (again.entities && again.asWritten) {
        // The facts lint is given for these entities are those it reads from the spec itself.
        const given = fresh(raw);
        rememberDirectoryFacts(given, again.entities);
        expect(factsOf('Directory', given)).toEqual(factsOf('Directory', fresh(raw)));
      }
      invalid = again.entities === undefined;
      if (again.entities) {
        valid++;
        before = again.entities;
      }
    }
    expect(valid).toBeGreaterThan(30);
  });

  it('gives the same array when no entity changed (a description edit changes nothing in effect)', () => {
    const list = [{ type: 'user', id: 'a', properties: { team: 'red' } }];
    const first = readEntities(directory(list, 'one'), undefined).entities;
    expect(readEntities(fresh(directory(list, 'two')), first).entities).toBe(first);
  });
});
