// A seeded generator of decision inputs aimed at the edges of the rules it is given: attributes
// present, missing, null or of every JSON type, near-miss values, unicode, addresses and timestamps.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseManifests } from '../../src/api/index.ts';
import { pathsOf, ruleModel, type Json, type RuleModel } from '../../src/policy/index.ts';

/** mulberry32: small, fast and good enough for test data. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SCALARS: readonly Json[] = [
  null, true, false, 0, -0, 1, 2, 2.5, 3, 3.0, -1, 0.5, 100.5, 1e21, 9007199254740991,
  '', 'a', 'b', 'm', 'z', 'A', 'admin', 'writer', '1', '3', 'é', 'e\u0301', 'café', '\uFFFD', '\uE000', '𝒜', '𝒜x', 'a𝒜', 'abcé',
  'true', 'null', 'not', 'x-y', 'draft', 'draft-1', '10.1.2.3', '10.0.0.0', '11.0.0.1', '2001:db8::1', '2001:db9::1', '::ffff:10.9.8.7',
  '010.1.2.3', '10.1.2.3/32', '1.2.3', 'fe80::1%eth0', '::', '::1', '2001:DB8:0:0:0:0:0:1',
  '2024-03-11T09:30:00Z', '2024-03-10T10:15:00Z', '2024-03-09T16:59:59.999+01:00', '2024-03-11T17:00:00-08:00', '2024-03-11T08:59:59Z',
  '2024-02-29T12:00:00Z', '2023-02-29T12:00:00Z', '2024-03-11t09:30:00z', '2024-03-11T9:30:00Z', '2024-03-11T24:00:00Z', '2024-03-11 09:30:00Z',
  '2262-04-11T23:47:16Z', '1970-01-01T00:00:00+23:59',
];

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)] as T;
}

function randomValue(r: () => number, depth: number): Json {
  const x = r();
  if (depth < 2 && x < 0.12) return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
  if (depth < 2 && x < 0.22) {
    const o: { [k: string]: Json } = {};
    for (let i = Math.floor(r() * 4); i > 0; i--) o[pick(r, ['a', 'admin', 'b', 'x', 'é', 'not', 'null'])] = randomValue(r, depth + 1);
    return o;
  }
  // Flags and nulls are where absorption and negation differ, so they come up more often.
  if (x < 0.4) return pick(r, [true, false, null]);
  return pick(r, SCALARS);
}

type Doc = { [k: string]: Json };
type Container = Doc | Json[];

/** Sets a value at a path, creating maps for string keys and lists long enough for numeric ones. */
function setPath(r: () => number, doc: Doc, keys: readonly (string | number)[], value: Json): void {
  let cur: Container = doc;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string | number;
    const last = i === keys.length - 1;
    const slot = typeof k === 'number' ? k : String(k);
    if (Array.isArray(cur) !== (typeof slot === 'number')) return; // a list cannot take a key, nor a map a position
    const holder = cur as { [key: string | number]: Json };
    if (last) { holder[slot] = value; return; }
    const next = holder[slot];
    const wantList = typeof keys[i + 1] === 'number';
    if (wantList ? !Array.isArray(next) : (typeof next !== 'object' || next === null || Array.isArray(next))) {
      const fresh: Container = wantList ? Array.from({ length: (keys[i + 1] as number) + Math.floor(r() * 3) }, () => randomValue(r, 1)) : {};
      if (wantList && r() < 0.2) (fresh as Json[]).length = 0; // sometimes too short
      holder[slot] = fresh;
      cur = fresh;
    } else cur = next as Container;
  }
}

export interface CorpusInput {
  principal: Doc;
  action: string;
  resource: Doc;
  context: Doc;
}

/** `count` inputs aimed at `rules`, reproducible from `seed`. */
export function generateInputs(rules: readonly RuleModel[], count: number, seed: number): CorpusInput[] {
  const r = rng(seed);
  const subjectTypes = [...new Set(rules.map((x) => x.subjectType)), 'User', 'robot'];
  const resourceTypes = [...new Set(rules.map((x) => x.resourceType)), 'Document'];
  const actions = [...new Set(rules.flatMap((x) => x.actions)), 'write ', 'Read'];
  const out: CorpusInput[] = [];
  for (let n = 0; n < count; n++) {
    const rule = pick(r, rules);
    const aimed = r() < 0.85;
    const input: CorpusInput = {
      principal: { type: aimed ? rule.subjectType : pick(r, subjectTypes), id: pick(r, ['u-1', 'g-1', 'svc-1', '']) },
      action: aimed ? pick(r, rule.actions) : pick(r, actions),
      resource: { type: aimed ? rule.resourceType : pick(r, resourceTypes), id: `doc-${n}` },
      context: {},
    };
    for (const p of pathsOf(rule.condition)) {
      if (p.root === 'action' || p.keys.length === 0 || r() < 0.15) continue;
      setPath(r, input[p.root], p.keys, randomValue(r, 0));
    }
    if (r() < 0.3) setPath(r, input[pick(r, ['principal', 'resource', 'context'] as const)], [pick(r, ['extra', 'meta', 'flag'])], randomValue(r, 0));
    out.push(input);
  }
  return out;
}

/** The rules of test/fixtures/corpus-rules.yaml, compiled. */
export function corpusRules(): RuleModel[] {
  const { manifests, errors } = parseManifests(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'corpus-rules.yaml'), 'utf8'), 'corpus-rules.yaml');
  if (errors.length > 0) throw new Error(errors.map((e) => e.message).join('; '));
  return manifests.map((m) => {
    if (m.kind !== 'Rule') throw new Error('corpus-rules.yaml holds only rules');
    const res = ruleModel(m.object);
    if (!res.ok) throw new Error(`${m.object.metadata.name}: ${res.error.message}`);
    return res.model;
  });
}
