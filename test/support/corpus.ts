// A seeded generator of decision inputs aimed at the edges of the rules it is given: attributes
// present, missing, null or of every JSON type, near-miss values, unicode, addresses and timestamps.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathsOf, type DirectoryEntity, type Json, type RuleModel } from '../../src/policy/index.ts';
import { ruleModelsOf } from './conformance.ts';
import { ruleModelFor } from './rules.ts';

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
  null,
  true,
  false,
  0,
  -0,
  1,
  2,
  2.5,
  3,
  3.0,
  -1,
  0.5,
  100.5,
  1e21,
  9007199254740991,
  '',
  'a',
  'b',
  'm',
  'z',
  'A',
  'admin',
  'writer',
  '1',
  '3',
  'é',
  'e\u0301',
  'café',
  '\uFFFD',
  '\uE000',
  '𝒜',
  '𝒜x',
  'a𝒜',
  'abcé',
  'true',
  'null',
  'not',
  'x-y',
  'draft',
  'draft-1',
  '10.1.2.3',
  '10.0.0.0',
  '11.0.0.1',
  '2001:db8::1',
  '2001:db9::1',
  '::ffff:10.9.8.7',
  '010.1.2.3',
  '10.1.2.3/32',
  '1.2.3',
  'fe80::1%eth0',
  '::',
  '::1',
  '2001:DB8:0:0:0:0:0:1',
  '2024-03-11T09:30:00Z',
  '2024-03-10T10:15:00Z',
  '2024-03-09T16:59:59.999+01:00',
  '2024-03-11T17:00:00-08:00',
  '2024-03-11T08:59:59Z',
  '2024-02-29T12:00:00Z',
  '2023-02-29T12:00:00Z',
  '2024-03-11t09:30:00z',
  '2024-03-11T9:30:00Z',
  '2024-03-11T24:00:00Z',
  '2024-03-11 09:30:00Z',
  '2262-04-11T23:47:16Z',
  '1970-01-01T00:00:00+23:59',
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
    if (last) {
      holder[slot] = value;
      return;
    }
    const next = holder[slot];
    const wantList = typeof keys[i + 1] === 'number';
    if (wantList ? !Array.isArray(next) : typeof next !== 'object' || next === null || Array.isArray(next)) {
      const fresh: Container = wantList
        ? Array.from({ length: (keys[i + 1] as number) + Math.floor(r() * 3) }, () => randomValue(r, 1))
        : {};
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
  actionProperties: Doc;
}

/**
 * How generateInputs aims at an entity directory. Without it the inputs are exactly those of earlier
 * versions (the same draws from the same seed), which recorded expectations rely on.
 */
export interface DirectoryAim {
  /** The directory's ids of a type: requests name them often, beside unknown ids and ids that are not strings. */
  readonly ids: (type: string) => readonly string[];
  /** How often the request leaves out an attribute a condition reads, so the directory's value shows (default 0.15). */
  readonly omit?: number;
  /** Values the directory holds (ids among them): drawn for some attributes, so comparisons meet equal values. */
  readonly values?: readonly Json[];
}

/** Ids that are not strings (the directory is not consulted) and the absent id. */
const NON_STRING_IDS: readonly (Json | undefined)[] = [7, 0, null, true, ['u-1'], { id: 'u-1' }, undefined];

function aimId(r: () => number, entity: Doc, type: Json | undefined, aim: DirectoryAim, types: readonly string[], unknown: string): void {
  const x = r();
  let id: Json | undefined;
  const own = typeof type === 'string' ? aim.ids(type) : [];
  if (x < 0.55 && own.length > 0) id = pick(r, own);
  else if (x < 0.65) {
    const other = aim.ids(pick(r, types));
    id = other.length > 0 ? pick(r, other) : unknown;
  } else if (x < 0.8) id = pick(r, [unknown, '', 'nobody', 'U-1', 'alice ', 'e\u0301']);
  else if (x < 0.9) id = pick(r, NON_STRING_IDS);
  else id = unknown;
  if (id === undefined) delete entity['id'];
  else entity['id'] = id;
}

/** `count` inputs aimed at `rules`, reproducible from `seed`; with `aim`, also at an entity directory. */
export function generateInputs(rules: readonly RuleModel[], count: number, seed: number, aim?: DirectoryAim): CorpusInput[] {
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
      actionProperties: {},
    };
    if (aim) {
      const types = [...new Set([...subjectTypes, ...resourceTypes])];
      aimId(r, input.principal, input.principal['type'], aim, types, pick(r, ['u-1', 'g-1', 'svc-1']));
      aimId(r, input.resource, input.resource['type'], aim, types, `doc-${n}`);
      // Now and then a type that is not a string: no rule matches, and the Rego must not stumble.
      if (r() < 0.03) input[pick(r, ['principal', 'resource'] as const)]['type'] = pick(r, [7, null, ['user'], { type: 'user' }]);
    }
    const omit = aim?.omit ?? 0.15;
    const values = aim?.values ?? [];
    for (const p of pathsOf(rule.condition)) {
      if (p.root === 'action' || p.keys.length === 0 || r() < omit) continue;
      // With a directory, the ids were chosen above: a condition reading them must not undo that.
      if (aim && (p.root === 'principal' || p.root === 'resource') && (p.keys[0] === 'id' || p.keys[0] === 'type')) continue;
      let value: Json;
      if (aim) {
        const hints = hintsFor(p.keys[p.keys.length - 1]);
        const x = r();
        value = hints.length > 0 && x < 0.45 ? pick(r, hints) : values.length > 0 && x < 0.6 ? pick(r, values) : randomValue(r, 0);
      } else value = randomValue(r, 0);
      setPath(r, input[p.root], p.keys, value);
    }
    if (aim) {
      // Extra keys anywhere, actionProperties too (a whole read of it counts them).
      if (r() < 0.35) {
        const root = pick(r, ['principal', 'resource', 'context', 'actionProperties'] as const);
        setPath(r, input[root], [pick(r, ['extra', 'meta', 'flag', 'soft', 'hard', 'x-y', 'dept', 'roles'])], randomValue(r, 0));
      }
    } else if (r() < 0.3)
      setPath(r, input[pick(r, ['principal', 'resource', 'context'] as const)], [pick(r, ['extra', 'meta', 'flag'])], randomValue(r, 0));
    out.push(input);
  }
  return out;
}

/** The rules of test/fixtures/corpus-rules.yaml, compiled. */
export function corpusRules(): RuleModel[] {
  return ruleModelsOf(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'corpus-rules.yaml'), 'utf8'), 'corpus-rules.yaml');
}

// ---------------------------------------------------------------------------------------------
// Entity directories

/** Rules that read the directory and the action's properties, for the directory agreement tests. */
export function directoryRules(): RuleModel[] {
  const rules: [string, string, string[], string, string][] = [
    ['dir-roles', 'user', ['read'], 'record', '"admin" in principal.roles'],
    ['dir-owner-soft', 'user', ['delete'], 'record', 'resource.owner == principal.team && actionProperties.soft == true'],
    ['dir-levels', 'user', ['write'], 'record', 'principal.level >= resource.level && !(principal.suspended == true)'],
    ['dir-quoted', 'service', ['read', 'write'], 'record', 'principal["x-y"] == "v" || principal.meta.a == 1 || principal.tags[0] == "a"'],
    // Whole-entity reads: every property of the type is embedded.
    ['dir-whole', 'user', ['list'], 'record', 'size(principal) >= 4 && "dept" in resource'],
    // group is the subject type of one rule and the resource type of another.
    ['dir-group-subject', 'group', ['read'], 'record', 'principal.tier == "gold" && resource.flag != false'],
    [
      'dir-group-resource',
      'user',
      ['join'],
      'group',
      'principal.id in resource.members || resource.open == true && !("banned" in principal)',
    ],
    // Whole reads of actionProperties, which a request may leave out altogether.
    ['dir-no-props', 'user', ['archive'], 'record', 'size(actionProperties) == 0 && principal.active == true'],
    [
      'dir-soft-key',
      'user',
      ['archive', 'purge'],
      'record',
      '"soft" in actionProperties || !("hard" in actionProperties) && resource.flag == true',
    ],
    ['dir-null-false', 'user', ['audit'], 'record', 'principal.flag == false || resource.nothing == null || !principal.flag'],
    // Builtins (net.cidr_contains, time.*) on values the directory supplies: never an error in OPA.
    [
      'dir-network-time',
      'service',
      ['connect'],
      'record',
      'cidr("10.0.0.0/8").containsIP(principal.ip) && timestamp(resource.created).getHours() >= 9',
    ],
    // Keys JavaScript objects inherit: they are properties like any other, or absent.
    [
      'dir-proto',
      'user',
      ['inspect'],
      'record',
      'principal["constructor"] == "c" || "toString" in resource || principal["__proto__"] == 1',
    ],
  ];
  return rules.map(([name, subjectType, actions, resourceType, condition]) => ({
    ...ruleModelFor(name, { subjectType, actions, resourceType, condition }),
    namespace: 'corpus',
  }));
}

/** Ids a directory lists: ASCII, unicode (combining marks, astral, private use), JSON escapes, look-alikes. */
const DIRECTORY_IDS: readonly string[] = [
  'u-1',
  'alice',
  'bob',
  'g-1',
  'svc-1',
  'doc-1',
  'doc-2',
  'é',
  'e\u0301',
  '𝒜',
  '中文',
  '\uFFFD',
  '\uE000',
  '"q"',
  'a b',
  'x-y',
  '\\',
  '0',
  'true',
  'null',
  'ünïcödé-😀',
  'bom\uFEFF',
  'tab\tnl\n',
  '\u2028',
  '\u0000',
  '\u007f',
];

/** Values that make the directory rules' comparisons come out true now and then. */
const PROPERTY_VALUES: readonly Json[] = [
  'u-1',
  'g-1',
  'svc-1',
  'alice',
  'bob',
  'v',
  'a',
  'c',
  'gold',
  1,
  2,
  3,
  true,
  false,
  null,
  ['admin'],
  ['reader', 'admin'],
  ['a'],
  [],
  ['u-1', 'alice'],
  { a: 1 },
  { a: [1, null] },
];

/** Values the directory rules look for, by the last key of the path they read. */
const HINTS: { readonly [key: string]: readonly Json[] } = {
  roles: [['admin'], ['reader', 'admin'], ['reader'], []],
  members: [['u-1', 'alice'], ['bob'], []],
  tier: ['gold', 'silver'],
  owner: ['red', 'blue'],
  team: ['red', 'blue'],
  level: [1, 2, 3],
  suspended: [true, false, null],
  active: [true, false],
  open: [true, false],
  flag: [true, false, null],
  nothing: [null, false],
  soft: [true, true, true, false, null],
  ip: ['10.1.2.3', '11.0.0.1', '::ffff:10.9.8.7', '010.1.2.3', 'x', 7],
  created: ['2024-03-11T09:30:00Z', '2024-03-11T08:59:59Z', '2024-03-11T9:30:00Z', '2262-04-11T23:47:17Z', null],
  hard: [true, null],
};

/** The hints for a key (own entries only: `constructor` is a key here, not Object). */
function hintsFor(key: string | number | undefined): readonly Json[] {
  return typeof key === 'string' && Object.hasOwn(HINTS, key) ? (HINTS[key] as readonly Json[]) : [];
}

/** Property keys no rule reads (they must not reach the Rego unless a rule reads a whole entity). */
const NOISE_KEYS: readonly string[] = [
  'email',
  'x-y',
  'not',
  'é',
  'dept',
  'banned',
  'constructor',
  'toString',
  '__proto__',
  'meta',
  'type',
  'id',
  '\uFEFF',
  'a"b',
  '',
];

/** The first key of every path each type's entities are read at (a subject type's principal.*, a resource type's resource.*). */
function readKeys(rules: readonly RuleModel[]): Map<string, { keys: Set<string>; paths: (readonly (string | number)[])[] }> {
  const out = new Map<string, { keys: Set<string>; paths: (readonly (string | number)[])[] }>();
  const add = (type: string, keys: readonly (string | number)[]): void => {
    let e = out.get(type);
    if (!e) {
      e = { keys: new Set(), paths: [] };
      out.set(type, e);
    }
    // type and id always come from the request (a directory has them only as noise).
    if (typeof keys[0] === 'string' && keys[0] !== 'type' && keys[0] !== 'id') {
      e.keys.add(keys[0]);
      e.paths.push(keys);
    }
  };
  for (const rule of rules) {
    add(rule.subjectType, []);
    add(rule.resourceType, []);
    for (const p of pathsOf(rule.condition)) {
      if (p.root === 'principal') add(rule.subjectType, p.keys);
      else if (p.root === 'resource') add(rule.resourceType, p.keys);
    }
  }
  return out;
}

/**
 * A directory for `rules`, reproducible from `seed`: for every type the rules name (and one they do
 * not), entities with some of the properties the rules read (nested where a path is nested, often
 * false or null, often equal to an id) and some they do not; ids from a shared pool, so one id
 * names entities of several types.
 */
export function generateDirectory(rules: readonly RuleModel[], seed: number): DirectoryEntity[] {
  const r = rng(seed);
  const read = readKeys(rules);
  const types = [...read.keys(), 'unused-type'].sort();
  const out: DirectoryEntity[] = [];
  for (const type of types) {
    // The first few ids are in (nearly) every type, so one id names entities of several types.
    const ids = DIRECTORY_IDS.filter((_, i) => r() < (i < 4 ? 0.9 : 0.55));
    for (const id of ids) {
      const props: Doc = {};
      const paths = read.get(type)?.paths ?? [];
      for (const keys of paths) {
        if (r() < 0.3) continue;
        const hints = hintsFor(keys[keys.length - 1]);
        const x = r();
        const value: Json = hints.length > 0 && x < 0.6 ? pick(r, hints) : x < 0.8 ? pick(r, PROPERTY_VALUES) : randomValue(r, 0);
        if (keys.length === 1 || r() < 0.3) define(props, keys[0] as string, value);
        else {
          const holder: Doc = {};
          setPath(r, holder, keys, value);
          define(props, keys[0] as string, holder[keys[0] as string] as Json);
        }
      }
      for (const key of NOISE_KEYS) if (r() < 0.2) define(props, key, randomValue(r, 0));
      out.push({ type, id, properties: props });
    }
  }
  return out;
}

/** Sets a key as an own property, even `__proto__`. */
function define(o: Doc, key: string, value: Json): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Every value a directory's properties hold, at any depth (for DirectoryAim.values). */
export function directoryValues(entities: readonly DirectoryEntity[]): Json[] {
  const out: Json[] = [];
  const walk = (v: Json): void => {
    out.push(v);
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
  };
  for (const e of entities) {
    out.push(e.id);
    Object.values(e.properties).forEach(walk);
  }
  return out;
}
