// The entity directory and the action's properties, through the OPA model (test/support/rego-model.ts):
// for rules that read them, OPA running the translated Rego (with the embedded directory extract and
// the merged documents acl_principal / acl_resource) must decide exactly like the native evaluator
// given the same directory. Also pins what the extract holds: only the keys the rules read.
import { describe, expect, it } from 'vitest';
import {
  buildDirectory,
  buildIndex,
  compileRule,
  decide,
  pathsOf,
  toDecisionInput,
  translate,
  type DecisionInput,
  type DirectoryEntity,
  type EntityDirectory,
  type Json,
  type RegoVersion,
  type RuleModel,
} from '../src/policy/index.ts';
import { directoryRules, directoryValues, generateDirectory, generateInputs } from './support/corpus.ts';
import { loadPolicy, RegoModelError, type Value } from './support/rego-model.ts';
import { ruleModelFor } from './support/rules.ts';

const VERSIONS: readonly RegoVersion[] = [0, 1];
const INPUTS_PER_RULE = 1000;

interface Case {
  /** What OPA is given: the request as JSON text would carry it. */
  readonly raw: unknown;
  /** What the evaluator is given: the same request, checked and normalized. */
  readonly input: DecisionInput;
}

function caseOf(doc: unknown): Case {
  const raw: unknown = JSON.parse(JSON.stringify(doc));
  const input = toDecisionInput(raw);
  if (typeof input === 'string') throw new Error(`${input}: ${JSON.stringify(raw)}`);
  return { raw, input };
}

/**
 * Every case on which the model running `rego` (with OPA's --strict-builtin-errors) and the native
 * evaluator with `directory` decide differently, described. A model error (an OPA conflict or an
 * unmodelled construct) propagates: it is never a silent agreement.
 */
function disagreements(rego: string, rules: readonly RuleModel[], directory: EntityDirectory, cases: readonly Case[]): string[] {
  const p = loadPolicy(rego, { strictBuiltinErrors: true });
  const index = buildIndex('corpus', rules.map(compileRule));
  const out: string[] = [];
  for (const c of cases) {
    const want = decide(index, c.input, directory).allow;
    const got = p.allow(c.raw);
    if (got !== want) out.push(`model ${got}, evaluator ${want}: ${JSON.stringify(c.raw)}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Generated: rules, a directory and many requests aimed at both.

const rules = directoryRules();
const entities = generateDirectory(rules, 7071);
const directory = buildDirectory(entities);
const cases: Case[] = generateInputs(rules, rules.length * INPUTS_PER_RULE, 31337, {
  ids: (type) => directory.ids(type),
  omit: 0.45,
  values: directoryValues(entities),
}).map((doc, i) => {
  // Some requests carry no actionProperties (or context) at all: both must read that as {}.
  const { actionProperties, context, ...rest } = doc;
  return caseOf({ ...rest, ...(i % 7 === 3 ? {} : { actionProperties }), ...(i % 11 === 5 ? {} : { context }) });
});

describe('the generated directory and requests', () => {
  it('are varied enough to mean something', () => {
    expect(cases.length).toBe(rules.length * INPUTS_PER_RULE);
    expect(directory.size).toBeGreaterThan(50);
    const known = (e: Json | undefined, type: Json | undefined): boolean =>
      typeof e === 'string' && typeof type === 'string' && directory.get(type, e) !== undefined;
    const principals = cases.filter((c) => known(c.input.principal['id'], c.input.principal['type'])).length;
    const resources = cases.filter((c) => known(c.input.resource['id'], c.input.resource['type'])).length;
    // Entities the directory knows, and ones it does not (unknown ids, ids that are not strings).
    expect(principals).toBeGreaterThan(cases.length / 3);
    expect(principals).toBeLessThan(cases.length * 0.8);
    expect(resources).toBeGreaterThan(cases.length / 3);
    expect(cases.filter((c) => typeof c.input.principal['id'] !== 'string').length).toBeGreaterThan(cases.length / 20);
    expect(cases.filter((c) => !Object.hasOwn(c.raw as object, 'actionProperties')).length).toBeGreaterThan(cases.length / 10);
    // Collisions: a key the request gives and the directory has too.
    const collisions = cases.filter((c) => {
      const { type, id } = c.input.principal;
      const props = typeof type === 'string' && typeof id === 'string' ? directory.get(type, id) : undefined;
      return props !== undefined && Object.keys(props).some((k) => Object.hasOwn(c.input.principal, k));
    }).length;
    expect(collisions).toBeGreaterThan(cases.length / 20);
    // Directory values that are false, null, nested maps and lists, and keys that need quoting.
    const values = entities.flatMap((e) => Object.values(e.properties));
    expect(values).toContain(false);
    expect(values).toContain(null);
    expect(values.some((v) => Array.isArray(v))).toBe(true);
    expect(values.some((v) => v !== null && typeof v === 'object' && !Array.isArray(v))).toBe(true);
    expect(entities.some((e) => Object.hasOwn(e.properties, 'x-y'))).toBe(true);
    expect(entities.some((e) => /[^\x20-\x7e]/.test(e.id))).toBe(true);
  });

  it('give every rule both outcomes, and outcomes the directory decides', () => {
    for (const rule of rules) {
      const index = buildIndex('corpus', [compileRule(rule)]);
      let allowed = 0;
      let byDirectory = 0;
      for (const c of cases) {
        const withDirectory = decide(index, c.input, directory).allow;
        if (withDirectory) allowed++;
        if (withDirectory !== decide(index, c.input).allow) byDirectory++;
      }
      expect([rule.name, allowed >= 5, allowed < cases.length - 5]).toEqual([rule.name, true, true]);
      expect([rule.name, byDirectory]).not.toEqual([rule.name, 0]);
    }
  });
});

describe('OPA (the model) on the translated rules with the directory decides like the evaluator', () => {
  for (const v of VERSIONS) {
    it(`for a bundle of all the rules (Rego v${v})`, () => {
      const rego = translate(rules, { regoVersion: v, directory });
      expect(rego).toContain('acl_directory');
      expect(disagreements(rego, rules, directory, cases).slice(0, 10)).toEqual([]);
    });

    it(`for a bundle of each rule alone, with its own pruned extract (Rego v${v})`, () => {
      const mismatches = rules.flatMap((rule) =>
        disagreements(translate([rule], { regoVersion: v, directory }), [rule], directory, cases).map((m) => `${rule.name}: ${m}`),
      );
      expect(mismatches.slice(0, 10)).toEqual([]);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Hand-picked: each way a request and the directory can meet.

describe('each way a request meets the directory', () => {
  const handRules = [
    ruleModelFor('roles', { subjectType: 'user', actions: ['read'], resourceType: 'record', condition: '"admin" in principal.roles' }),
    ruleModelFor('owner-soft', {
      subjectType: 'user',
      actions: ['delete'],
      resourceType: 'record',
      condition: 'resource.owner == principal.id && actionProperties.soft == true',
    }),
    ruleModelFor('whole', {
      subjectType: 'user',
      actions: ['list'],
      resourceType: 'record',
      condition: 'size(principal) == 4 && "dept" in resource',
    }),
    ruleModelFor('tier', { subjectType: 'group', actions: ['read'], resourceType: 'record', condition: 'principal.tier == "gold"' }),
    ruleModelFor('members', {
      subjectType: 'user',
      actions: ['join'],
      resourceType: 'group',
      condition: 'principal.id in resource.members',
    }),
    ruleModelFor('no-props', {
      subjectType: 'user',
      actions: ['archive'],
      resourceType: 'record',
      condition: 'size(actionProperties) == 0',
    }),
    ruleModelFor('soft-key', {
      subjectType: 'user',
      actions: ['purge'],
      resourceType: 'record',
      condition: '"soft" in actionProperties && !("hard" in actionProperties)',
    }),
    ruleModelFor('quoted', {
      subjectType: 'user',
      actions: ['tag'],
      resourceType: 'record',
      condition: 'principal["x-y"] == false && principal.nested.a[1] == null',
    }),
  ];
  const handDirectory = buildDirectory([
    { type: 'user', id: 'alice', properties: { roles: ['admin'], email: 'a@x', 'x-y': false, nested: { a: [1, null] } } },
    { type: 'user', id: 'bob', properties: { email: 'b@x' } },
    { type: 'user', id: 'ünï😀', properties: { roles: ['admin'] } },
    { type: 'record', id: 'r1', properties: { owner: 'bob', dept: null } },
    { type: 'group', id: 'g1', properties: { tier: 'gold', members: ['alice'] } },
    { type: 'group', id: 'alice', properties: { tier: 'gold' } },
  ]);
  const user = (id: Json | undefined, extra: Record<string, Json> = {}): Record<string, Json> => ({
    type: 'user',
    ...(id === undefined ? {} : { id }),
    ...extra,
  });
  const req = (
    principal: Record<string, Json>,
    action: string,
    resource: Record<string, Json>,
    actionProperties?: Record<string, Json>,
  ): unknown => ({ principal, action, resource, ...(actionProperties === undefined ? {} : { actionProperties }) });
  // [what, request, allowed]
  const table: [string, unknown, boolean][] = [
    ['the directory supplies a missing key', req(user('alice'), 'read', { type: 'record', id: 'r9' }), true],
    ['the request key wins over the directory key, whole', req(user('alice', { roles: ['reader'] }), 'read', { type: 'record' }), false],
    ['a request key that is null still wins', req(user('alice', { roles: null }), 'read', { type: 'record' }), false],
    ['an entity the directory does not know', req(user('carol'), 'read', { type: 'record' }), false],
    ['an id that is not a string', req(user(7), 'read', { type: 'record' }), false],
    ['an id that is absent', req(user(undefined), 'read', { type: 'record' }), false],
    ['an id of another type', req({ type: 'user', id: 'g1' }, 'read', { type: 'record' }), false],
    ['a unicode id', req(user('ünï😀'), 'read', { type: 'record' }), true],
    [
      'both entities from the directory, with the action property',
      req(user('bob'), 'delete', { type: 'record', id: 'r1' }, { soft: true }),
      true,
    ],
    ['both entities from the directory, without it', req(user('bob'), 'delete', { type: 'record', id: 'r1' }), false],
    [
      'the request overrides the resource owner',
      req(user('bob'), 'delete', { type: 'record', id: 'r1', owner: 'alice' }, { soft: true }),
      false,
    ],
    [
      'a whole principal counts the directory keys (type, id, email and one more)',
      req(user('bob', { extra: 1 }), 'list', { type: 'record', id: 'r1' }),
      true,
    ],
    ['a whole principal without them', req(user('carol', { extra: 1 }), 'list', { type: 'record', id: 'r1' }), false],
    ['a collision adds no key', req(user('bob', { email: 'other' }), 'list', { type: 'record', id: 'r1' }), false],
    ['"dept" in resource holds for a null directory value', req(user('bob', { n: 1 }), 'list', { type: 'record', id: 'r1' }), true],
    ['a group as subject', req({ type: 'group', id: 'g1' }, 'read', { type: 'record' }), true],
    ['a group as resource', req(user('alice'), 'join', { type: 'group', id: 'g1' }), true],
    ['the group the user id also names', req(user('alice'), 'join', { type: 'group', id: 'alice' }), false],
    ['no actionProperties at all', req(user('x'), 'archive', { type: 'record' }), true],
    ['empty actionProperties', req(user('x'), 'archive', { type: 'record' }, {}), true],
    ['some actionProperties', req(user('x'), 'archive', { type: 'record' }, { soft: false }), false],
    ['a key in actionProperties, even false', req(user('x'), 'purge', { type: 'record' }, { soft: false }), true],
    ['two keys in actionProperties', req(user('x'), 'purge', { type: 'record' }, { soft: true, hard: null }), false],
    ['no actionProperties for a key test', req(user('x'), 'purge', { type: 'record' }), false],
    ['a quoted key and a nested null from the directory', req(user('alice'), 'tag', { type: 'record' }), true],
    ['the same from the request', req(user('bob', { 'x-y': false, nested: { a: [0, null] } }), 'tag', { type: 'record' }), true],
  ];

  it('the evaluator decides each as expected', () => {
    const index = buildIndex('acme', handRules.map(compileRule));
    expect(table.map(([what, doc]) => [what, decide(index, caseOf(doc).input, handDirectory).allow])).toEqual(
      table.map(([what, , allow]) => [what, allow]),
    );
  });

  for (const v of VERSIONS) {
    it(`OPA (the model) decides each like the evaluator (Rego v${v})`, () => {
      const p = loadPolicy(translate(handRules, { regoVersion: v, directory: handDirectory }), { strictBuiltinErrors: true });
      expect(table.map(([what, doc]) => [what, p.allow(caseOf(doc).raw)])).toEqual(table.map(([what, , allow]) => [what, allow]));
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Pruning: the extract holds the keys the rules read, and nothing when they read nothing it has.

/** The extract an independent reading of the rules expects: per type, the keys read (all for a whole read). */
function expectedExtract(
  ruleSet: readonly RuleModel[],
  all: readonly DirectoryEntity[],
): Record<string, Record<string, Record<string, Json>>> {
  const wanted = new Map<string, Set<string> | 'all'>();
  const want = (type: string, key: string | number | undefined): void => {
    if (wanted.get(type) === 'all') return;
    if (key === undefined) {
      wanted.set(type, 'all');
      return;
    }
    if (typeof key !== 'string' || key === 'type' || key === 'id') return;
    const s = (wanted.get(type) ?? new Set<string>()) as Set<string>;
    s.add(key);
    wanted.set(type, s);
  };
  for (const r of ruleSet) {
    for (const p of pathsOf(r.condition)) {
      if (p.root === 'principal') want(r.subjectType, p.keys[0]);
      if (p.root === 'resource') want(r.resourceType, p.keys[0]);
    }
  }
  const out: Record<string, Record<string, Record<string, Json>>> = {};
  const seen = new Set<string>();
  for (const e of all) {
    const w = wanted.get(e.type);
    const key = `${e.type}\u0000${e.id}`;
    if (!w || seen.has(key)) continue;
    seen.add(key);
    const props = Object.fromEntries(Object.entries(e.properties).filter(([k]) => w === 'all' || w.has(k)));
    if (Object.keys(props).length === 0) continue;
    out[e.type] ??= {};
    Object.defineProperty(out[e.type], e.id, { value: props, enumerable: true });
  }
  // As JSON text: the Rego prints -0 as 0, which OPA compares equal anyway.
  return JSON.parse(JSON.stringify(out)) as Record<string, Record<string, Record<string, Json>>>;
}

/** The embedded acl_directory, read back through the model (undefined when there is none). */
function embedded(rego: string): Value | undefined {
  const p = loadPolicy(rego);
  try {
    return p.value('acl_directory', {});
  } catch (err) {
    if (err instanceof RegoModelError && /no rule named acl_directory/.test(err.message)) return undefined;
    throw err;
  }
}

describe('the embedded directory', () => {
  for (const v of VERSIONS) {
    it(`holds exactly the properties the rules read, for all the rules and for each alone (Rego v${v})`, () => {
      for (const ruleSet of [rules, ...rules.map((r) => [r])]) {
        const expected = expectedExtract(ruleSet, entities);
        const got = embedded(translate(ruleSet, { regoVersion: v, directory }));
        expect([ruleSet.map((r) => r.name), got ?? {}]).toEqual([ruleSet.map((r) => r.name), expected]);
      }
    });
  }

  it('leaves out a property no rule reads, and entities without any it does', () => {
    const only = [
      ruleModelFor('roles', { subjectType: 'user', actions: ['read'], resourceType: 'record', condition: '"admin" in principal.roles' }),
    ];
    const dir = buildDirectory([
      { type: 'user', id: 'alice', properties: { roles: ['admin'], email: 'a@x' } },
      { type: 'user', id: 'bob', properties: { email: 'b@x' } },
      { type: 'record', id: 'alice', properties: { roles: ['x'] } },
    ]);
    for (const v of VERSIONS) {
      const rego = translate(only, { regoVersion: v, directory: dir });
      expect(rego).not.toContain('email');
      expect(rego).not.toContain('"bob"');
      expect(embedded(rego)).toEqual({ user: { alice: { roles: ['admin'] } } });
    }
    // A whole read of the principal takes every property of its type.
    const whole = [
      ruleModelFor('whole', { subjectType: 'user', actions: ['read'], resourceType: 'record', condition: 'size(principal) > 3' }),
    ];
    expect(embedded(translate(whole, { regoVersion: 0, directory: dir }))).toEqual({
      user: { alice: { roles: ['admin'], email: 'a@x' }, bob: { email: 'b@x' } },
    });
  });

  it('is omitted entirely, the Rego unchanged, when the rules read nothing the directory has', () => {
    const dir = buildDirectory([
      { type: 'user', id: 'alice', properties: { roles: ['admin'] } },
      { type: 'record', id: 'r1', properties: { owner: 'alice' } },
    ]);
    const sets: RuleModel[][] = [
      [
        ruleModelFor('ctx', {
          subjectType: 'user',
          resourceType: 'record',
          condition: 'context.ip == "1" && actionProperties.soft == true && size(actionProperties) == 0',
        }),
      ],
      [
        ruleModelFor('missing-key', {
          subjectType: 'user',
          resourceType: 'record',
          condition: 'principal.team == "x" && resource.roles == 1',
        }),
      ],
      [
        ruleModelFor('ids', {
          subjectType: 'user',
          resourceType: 'record',
          condition: 'principal.id == resource.id && principal.type == "user"',
        }),
      ],
      [
        ruleModelFor('other-type', {
          subjectType: 'robot',
          resourceType: 'document',
          condition: 'size(principal) == 1 && "owner" in resource',
        }),
      ],
      [ruleModelFor('no-condition', { subjectType: 'user', resourceType: 'record' })],
    ];
    for (const set of sets) {
      for (const v of VERSIONS) {
        const without = translate(set, { regoVersion: v });
        expect([set[0]!.name, v, translate(set, { regoVersion: v, directory: dir }) === without]).toEqual([set[0]!.name, v, true]);
        expect(without).not.toContain('acl_directory');
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The comparison can fail: Rego that merges the wrong way round is caught.

describe('a translation that merged wrongly', () => {
  /** The translated Rego with the directory winning over the request (the precedence reversed). */
  function directoryWins(rego: string, v: RegoVersion): string {
    const open = (head: string): string => (v === 1 ? `${head} if {` : `${head} {`);
    const eq = v === 1 ? ':=' : '=';
    let out = rego;
    for (const root of ['principal', 'resource']) {
      const right = [
        `${open(`acl_${root}[k] ${eq} x`)}\n\tx := input.${root}[k]\n}`,
        `${open(`acl_${root}[k] ${eq} x`)}\n\tx := acl_directory[input.${root}.type][input.${root}.id][k]\n\tnot acl_has_key(input.${root}, k)\n}`,
      ].join('\n');
      const wrong = [
        `${open(`acl_${root}[k] ${eq} x`)}\n\tx := input.${root}[k]\n\tnot acl_known(input.${root}, k)\n}`,
        `${open(`acl_${root}[k] ${eq} x`)}\n\tx := acl_directory[input.${root}.type][input.${root}.id][k]\n}`,
      ].join('\n');
      if (!out.includes(right)) throw new Error(`the translator's merge of ${root} is not where this test expects it`);
      out = out.replace(right, wrong);
    }
    return `${out}\n${open('acl_known(e, k)')}\n\t_ = acl_directory[e.type][e.id][k]\n}\n`;
  }

  for (const v of VERSIONS) {
    it(`is told apart from the evaluator on the generated requests (Rego v${v})`, () => {
      // The right Rego agrees on these cases (the tests above); the reversed one must not.
      const wrong = directoryWins(translate(rules, { regoVersion: v, directory }), v);
      const found = disagreements(wrong, rules, directory, cases);
      expect(found.length).toBeGreaterThan(20);
      // Each one is a request that names a known entity and gives a key the directory also has.
      const collision = (doc: Record<string, Json>): boolean => {
        const props = typeof doc['type'] === 'string' && typeof doc['id'] === 'string' ? directory.get(doc['type'], doc['id']) : undefined;
        return props !== undefined && Object.keys(props).some((k) => Object.hasOwn(doc, k));
      };
      for (const f of found) {
        const raw = JSON.parse(f.slice(f.indexOf(': ') + 2)) as { principal: Record<string, Json>; resource: Record<string, Json> };
        expect([f, collision(raw.principal) || collision(raw.resource)]).toEqual([f, true]);
      }
    });

    it(`raises OPA's conflict error when both clauses give a colliding key (Rego v${v})`, () => {
      const rego = translate(rules, { regoVersion: v, directory });
      const unguarded = rego.replaceAll('\tnot acl_has_key(input.principal, k)\n', '');
      expect(unguarded).not.toBe(rego);
      expect(() => disagreements(unguarded, rules, directory, cases)).toThrow(/object keys must be unique/);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// A directory id that is not well-formed UTF-16. A request's id is normalized (a lone surrogate
// becomes U+FFFD, as OPA's JSON decoder does) and regoString() prints the directory's id that way,
// so buildDirectory normalizes ids too (and the Directory schema refuses them with a clear message).
// Before that fix the evaluator kept "\uD800", never found it, and disagreed with OPA.

describe('a directory id with a lone surrogate', () => {
  const rule = ruleModelFor('roles', {
    subjectType: 'user',
    actions: ['read'],
    resourceType: 'record',
    condition: '"admin" in principal.roles',
  });
  const dir = buildDirectory([{ type: 'user', id: '\uD800', properties: { roles: ['admin'] } }]);
  const request = caseOf({ principal: { type: 'user', id: '\uFFFD' }, action: 'read', resource: { type: 'record' } });

  it('is found by the id a request sends, by the evaluator and by OPA alike', () => {
    expect(decide(buildIndex('acme', [compileRule(rule)]), request.input, dir).allow).toBe(true);
    for (const v of VERSIONS) expect(loadPolicy(translate([rule], { regoVersion: v, directory: dir })).allow(request.raw)).toBe(true);
    for (const v of VERSIONS)
      expect(disagreements(translate([rule], { regoVersion: v, directory: dir }), [rule], dir, [request])).toEqual([]);
  });
});
