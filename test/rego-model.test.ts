// Checks the translator's printed Rego against the native evaluator through an independent model of
// OPA (test/support/rego-model.ts), since CI has no OPA binary. The model is itself pinned to OPA's
// documented behaviour by the unit tests at the end.
import { describe, expect, it } from 'vitest';
import {
  buildIndex,
  compileCondition,
  compileRule,
  matchingRules,
  toDecisionInput,
  translate,
  type DecisionInput,
  type RegoVersion,
  type RuleModel,
} from '../src/policy/index.ts';
import { conformanceRules, conformanceVectors } from './support/conformance.ts';
import { corpusRules, generateInputs } from './support/corpus.ts';
import { loadPolicy, RegoModelError, type RegoPolicy } from './support/rego-model.ts';

const VERSIONS: readonly RegoVersion[] = [0, 1];
const enforced = conformanceRules().filter((r) => r.state === 'Enforced');
const vectors = conformanceVectors().map((v) => {
  const input = toDecisionInput(v.input);
  if (typeof input === 'string') throw new Error(`vector on line ${v.line}: ${input}`);
  return { ...v, input };
});

// Every comparison runs the model with OPA's --strict-builtin-errors: a builtin error would fail the
// query there (and throw here), so these tests also prove the Rego never raises one.
function policy(rules: readonly RuleModel[], regoVersion: RegoVersion): RegoPolicy {
  return loadPolicy(translate(rules, { regoVersion }), { strictBuiltinErrors: true });
}

describe('the translated conformance policy, run by the OPA model', () => {
  it('loads 41 Enforced rules and 6,001 vectors', () => {
    expect(enforced).toHaveLength(41);
    expect(vectors).toHaveLength(6001);
  });

  for (const v of VERSIONS) {
    it(`reproduces every recorded decision (Rego v${v})`, () => {
      const p = policy(enforced, v);
      expect(p.version).toBe(v);
      const mismatches: string[] = [];
      let allowed = 0;
      for (const vec of vectors) {
        const got = p.allow(vec.input);
        if (got) allowed++;
        if (got !== vec.allow) mismatches.push(`line ${vec.line}: model ${got}, recorded ${vec.allow}: ${JSON.stringify(vec.input)}`);
      }
      expect(mismatches.slice(0, 10)).toEqual([]);
      expect(allowed).toBeGreaterThan(0);
      expect(allowed).toBeLessThan(vectors.length);
    });

    it(`matches every rule alone against the recorded matches (Rego v${v})`, () => {
      const mismatches: string[] = [];
      let matched = 0;
      for (const rule of enforced) {
        const p = policy([rule], v);
        for (const vec of vectors) {
          const want = vec.matches.includes(rule.name);
          const got = p.allow(vec.input);
          if (got) matched++;
          if (got !== want) mismatches.push(`${rule.name}, line ${vec.line}: model ${got}, recorded ${want}: ${JSON.stringify(vec.input)}`);
        }
      }
      expect(mismatches.slice(0, 10)).toEqual([]);
      expect(matched).toBe(vectors.reduce((n, vec) => n + vec.matches.length, 0));
    });
  }
});

describe('the translated corpus rules, run by the OPA model', () => {
  const rules = corpusRules();
  const inputs = generateInputs(rules, rules.length * 400, 20261122).map((raw) => {
    const input = toDecisionInput(raw);
    if (typeof input === 'string') throw new Error(input);
    return input;
  });

  for (const v of VERSIONS) {
    it(`agrees with the native evaluator on every generated input, rule by rule (Rego v${v})`, () => {
      const mismatches: string[] = [];
      let allowed = 0;
      for (const rule of rules) {
        const p = policy([rule], v);
        const index = buildIndex('corpus', [compileRule(rule)]);
        for (const input of inputs) {
          const want = matchingRules(index, input).length > 0;
          const got = p.allow(input);
          if (got) allowed++;
          if (got !== want) mismatches.push(`${rule.name}: model ${got}, evaluator ${want}: ${JSON.stringify(input)}`);
        }
      }
      expect(mismatches.slice(0, 10)).toEqual([]);
      expect(allowed).toBeGreaterThan(rules.length * 20);
    });
  }
});

describe('the translated time and network rules on hand-picked edge values', () => {
  // The generated corpus rarely reaches these rules' true side; these inputs cover it.
  const rules = corpusRules();
  const stamps = [
    '2024-03-11T09:30:00Z',
    '2024-03-11T16:59:59.999999999Z',
    '2024-03-11T17:00:00Z',
    '2024-03-11T08:59:59Z',
    '2024-03-10T10:15:00Z',
    '2024-03-09T16:59:59.999+01:00',
    '2024-03-11T17:00:00-08:00',
    '2024-02-29T12:00:00Z',
    '2023-02-29T12:00:00Z',
    '2024-03-11t09:30:00z',
    '2024-03-11T9:30:00Z',
    '2024-03-11T24:00:00Z',
    '1970-01-01T00:00:00+23:59',
    '1969-12-31T23:59:59.5-00:30',
    '2262-04-11T23:47:16Z',
    '2262-04-11T23:47:17Z',
    '1677-09-21T00:12:44Z',
    '1677-09-21T00:12:43Z',
    '0000-01-01T10:00:00Z',
    '9999-12-31T10:00:00Z',
    'x',
    7,
    null,
    '1678-01-01T00:00:00+23:59',
    '2261-12-31T23:59:59-23:59',
    '1677-12-31T23:59:59Z',
    '2262-01-01T00:00:00Z',
    '1900-02-29T10:00:00Z',
    '2000-02-29T10:00:00Z',
    '2100-02-29T10:00:00Z',
    '2260-02-29T10:00:00Z',
    '1680-02-29T10:00:00Z',
    '2024-04-31T10:00:00Z',
    '2024-03-11T10:00:00,5Z',
    '2024-03-11T10:00:00.Z',
    '2024-03-11T10:00:00+24:00',
    '2024-03-11T10:00:60Z',
  ];
  const addresses = [
    '10.1.2.3',
    '10.0.0.0',
    '11.0.0.1',
    '010.1.2.3',
    '10.1.2.3/32',
    '1.2.3',
    '::ffff:10.9.8.7',
    '::ffff:a09:807',
    '2001:db8::1',
    '2001:db9::1',
    '2001:DB8:0:0:0:0:0:1',
    'fe80::1%eth0',
    '::',
    '::1',
    '::10.1.2.3',
    '1:2:3:4:5:6:7::8',
    '2001:db8::/48',
    '',
    3,
    true,
    '1.2.3.4.5',
    '256.1.1.1',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    '::ffff:1.2.3.04',
    'abc',
    '12345::',
    ':1',
    '1:',
    '1:2:3:4:5:6:1.2.3.4',
    '1:2:3:4:5:6:7:1.2.3.4',
    '::1.2.3.4',
    ' 10.1.2.3',
    '10.1.2.3 ',
    '1:2:3:4:5:6:7::',
    '::2:3:4:5:6:7:8',
    '::ffff:10.1.2.3',
  ];
  const docs = (root: 'context', key: string, values: readonly unknown[], extra: readonly Record<string, unknown>[]): unknown[] =>
    values.flatMap((value) =>
      extra.map((e) => ({ principal: { type: 'x', ...e }, action: 'x', resource: { type: 'x' }, [root]: { [key]: value, ...e } })),
    );
  const cases: [string, unknown[]][] = [
    ['corpus-time', docs('context', 'timeOfDay', stamps, [{ level: 30 }, { level: 0 }, { level: 59 }, {}])],
    ['corpus-network', docs('context', 'ipAddress', addresses, [{ trusted: true }, { trusted: false }, {}])],
  ];
  for (const [name, raw] of cases) {
    const rule = rules.find((r) => r.name === name);
    if (!rule) throw new Error(`no rule ${name}`);
    for (const v of VERSIONS) {
      it(`${name} agrees with the native evaluator (Rego v${v})`, () => {
        const p = policy([rule], v);
        const index = buildIndex('edge', [compileRule(rule)]);
        const mismatches: string[] = [];
        let allowed = 0;
        for (const r of raw) {
          const doc = toDecisionInput(r);
          if (typeof doc === 'string') throw new Error(doc);
          // Aim every input at the rule: its types and first action.
          const input: DecisionInput = {
            ...doc,
            principal: { ...doc.principal, type: rule.subjectType },
            action: rule.actions[0] as string,
            resource: { ...doc.resource, type: rule.resourceType },
          };
          const want = matchingRules(index, input).length > 0;
          const got = p.allow(input);
          if (got) allowed++;
          if (got !== want) mismatches.push(`model ${got}, evaluator ${want}: ${JSON.stringify(input)}`);
        }
        expect(mismatches).toEqual([]);
        expect(allowed).toBeGreaterThan(3);
      });
    }
  }
});

// ---------------------------------------------------------------------------------------------
// The model itself: each case is OPA behaviour that the model must reproduce.

const input = (principal: Record<string, unknown>): DecisionInput =>
  ({
    principal: { type: 'user', ...principal },
    action: 'read',
    resource: { type: 'doc' },
    context: {},
    actionProperties: {},
  }) as DecisionInput;

/** A v0 module with one rule `r` per body given. */
function module(...bodies: string[]): RegoPolicy {
  return loadPolicy(`package t\n\n${bodies.map((b) => `r {\n\t${b.split('\n').join('\n\t')}\n}`).join('\n')}\n`);
}

function holds(body: string, doc: DecisionInput = input({})): boolean {
  return module(body).rule('r', doc);
}

describe('the OPA model', () => {
  it('makes undefined references fail a statement, never error', () => {
    const doc = input({ n: 1, list: [1, 2], obj: { a: { b: 1 }, '0': 'zero' } });
    expect(holds('input.principal.missing == 1', doc)).toBe(false);
    expect(holds('input.principal.missing != 1', doc)).toBe(false);
    expect(holds('input.principal.n.x != 1', doc)).toBe(false); // a key of a scalar
    expect(holds('input.principal.list[2] != 1', doc)).toBe(false); // out of range
    expect(holds('input.principal.list["0"] != 1', doc)).toBe(false); // a string key on an array
    expect(holds('input.principal.obj[0] != 1', doc)).toBe(false); // a number key on an object
    expect(holds('input.principal.obj["0"] == "zero"', doc)).toBe(true);
    expect(holds('input.principal.list[1] == 2', doc)).toBe(true);
  });

  it('negates by failure, and `not x == y` holds when x is undefined (unlike `x != y`)', () => {
    expect(holds('not input.principal.x == 1')).toBe(true);
    expect(holds('input.principal.x != 1')).toBe(false);
    expect(holds('not input.principal.x == 1', input({ x: 1 }))).toBe(false);
    expect(holds('not input.principal.x', input({ x: false }))).toBe(true);
    expect(holds('not input.principal.x', input({ x: 0 }))).toBe(false); // 0 is not false
  });

  it('evaluates the arguments of a negated call outside the negation (OPA issue #1877)', () => {
    const p = loadPolicy(
      [
        'package t',
        'f(x) {',
        '\tx == 1',
        '}',
        'neg_missing {',
        '\tnot f(input.missing)',
        '}',
        'neg_other {',
        '\tnot f(input.principal.type)',
        '}',
        'neg_builtin_error {',
        '\tnot startswith(input.principal.type, 1)',
        '}',
        'neg_nested {',
        '\tnot count(input.missing) == 1',
        '}',
      ].join('\n'),
    );
    const doc = input({});
    expect(p.rule('neg_missing', doc)).toBe(false); // `__local0__ = input.missing` fails first
    expect(p.rule('neg_other', doc)).toBe(true);
    expect(p.rule('neg_builtin_error', doc)).toBe(true); // a type error is undefined, so its negation holds
    expect(p.rule('neg_nested', doc)).toBe(false); // nested calls are hoisted too (OPA issue #7558)
  });

  it('would catch a translation that negates a comparison with `not`', () => {
    const compiled = compileCondition('!(principal.x == 1)');
    if (!compiled.ok) throw new Error(compiled.error.message);
    const rule: RuleModel = {
      namespace: 't',
      name: 'not-x',
      state: 'Enforced',
      description: undefined,
      subjectType: 'user',
      actions: ['read'],
      resourceType: 'doc',
      conditionText: '!(principal.x == 1)',
      condition: compiled.cond,
    };
    const missing = input({});
    const evaluator = matchingRules(buildIndex('t', [compileRule(rule)]), missing).length > 0;
    expect(evaluator).toBe(false); // a missing attribute is an error in CEL, so the rule does not match
    for (const v of VERSIONS) expect(policy([rule], v).allow(missing)).toBe(evaluator);
    // The tempting translation `not input.principal.x == 1` allows the request in OPA.
    const wrong = loadPolicy(
      'package acl\ndefault allow = false\nallow {\n\tinput.principal.type == "user"\n\tnot input.principal.x == 1\n}\n',
    );
    expect(wrong.allow(missing)).toBe(true);
  });

  it('orders values totally: null < booleans < numbers < strings < arrays < objects', () => {
    expect(holds('"a" > 1')).toBe(true); // the translator must guard types; OPA will not
    expect(holds('null < false')).toBe(true);
    expect(holds('false < true')).toBe(true);
    expect(holds('true < 0')).toBe(true);
    expect(holds('[1, 2] < [1, 2, 0]')).toBe(true);
    expect(holds('[2] > [1, 9]')).toBe(true);
    expect(holds('[] < {}')).toBe(true);
    expect(holds('{"a": 2} > {"a": 1, "b": 0}')).toBe(true);
    expect(holds('3 == 3.0')).toBe(true);
    expect(holds('1e2 == 100')).toBe(true);
    expect(holds('"3" != 3')).toBe(true);
    expect(holds('[1, "a"] == [1.0, "a"]')).toBe(true);
    expect(holds('{"a": [1]} == {"a": [1]}')).toBe(true);
    // Code points, not UTF-16 units: U+1D49C sorts after U+FFFD (JavaScript's `<` says the opposite).
    expect('\u{1D49C}' < '\uFFFD').toBe(true);
    expect(holds('"\\ud835\\udc9c" > "\\uFFFD"')).toBe(true);
    expect(holds('"é" == "e\\u0301"')).toBe(false); // no normalization
  });

  it('iterates with `_`, tests definedness with `_ =`, and knows v1 set membership', () => {
    expect(holds('input.action == ["write", "read"][_]')).toBe(true);
    expect(holds('input.action == ["write"][_]')).toBe(false);
    expect(holds('input.principal.c[_] == 2', input({ c: { a: 1, b: 2 } }))).toBe(true);
    expect(holds('_ = input.principal.c["k"]', input({ c: { k: false } }))).toBe(true);
    expect(holds('_ = input.principal.c["k"]', input({ c: { k: null } }))).toBe(true);
    expect(holds('_ = input.principal.c["j"]', input({ c: { k: null } }))).toBe(false);
    const v1 = loadPolicy('package t\n\nimport rego.v1\n\nr if {\n\tinput.action in {"read", "write"}\n}\n');
    expect(v1.rule('r', input({}))).toBe(true);
    expect(v1.rule('r', { ...input({}), action: 'delete' })).toBe(false);
  });

  it('ORs the bodies of a rule and tries every definition of a function', () => {
    const p = loadPolicy(
      [
        'package t',
        'size(x) = n {',
        '\tis_string(x)',
        '\tn := count(x)',
        '}',
        'size(x) = n {',
        '\tis_array(x)',
        '\tn := count(x)',
        '}',
        'r {',
        '\tsize(input.principal.v) == 2',
        '}',
        'r {',
        '\tinput.principal.w == true',
        '}',
      ].join('\n'),
    );
    expect(p.rule('r', input({ v: 'é𝒜' }))).toBe(true); // two code points
    expect(p.rule('r', input({ v: [1, 2] }))).toBe(true);
    expect(p.rule('r', input({ v: { a: 1, b: 2 } }))).toBe(false); // no object definition
    expect(p.rule('r', input({ v: 12, w: true }))).toBe(true);
    expect(p.call('size', [5])).toBeUndefined();
  });

  it('applies the builtins only to their types (else undefined)', () => {
    const p = module('true');
    expect(p.call('is_number', [1])).toBe(true);
    expect(p.call('is_number', ['1'])).toBe(false);
    expect(p.call('is_object', [[]])).toBe(false);
    expect(p.call('count', [5])).toBeUndefined();
    expect(p.call('startswith', ['𝒜x', '𝒜'])).toBe(true);
    expect(p.call('startswith', [1, '1'])).toBeUndefined();
    expect(p.call('endswith', ['ab\uFFFD', '\uFFFD'])).toBe(true);
    expect(p.call('contains', ['abc', ''])).toBe(true);
    expect(p.call('regex.match', ['^a[0-9]{2}$', 'a12'])).toBe(true);
    expect(p.call('regex.match', ['^a[0-9]{2}$', 'a12\n'])).toBe(false);
    expect(() => p.call('regex.match', ['^a.b$', 'axb'])).toThrow(RegoModelError);
  });

  it('parses addresses and blocks like Go, and contains like net.IPNet', () => {
    const p = module('true');
    const contains = (c: string, x: string): unknown => p.call('net.cidr_contains', [c, x]);
    expect(contains('10.0.0.0/8', '10.1.2.3')).toBe(true);
    expect(contains('10.0.0.0/8', '11.0.0.1')).toBe(false);
    expect(contains('10.0.0.0/8', '010.1.2.3')).toBeUndefined(); // leading zero
    expect(contains('10.0.0.0/8', '10.1.2')).toBeUndefined();
    expect(contains('10.0.0.0/8', '10.1.2.256')).toBeUndefined();
    expect(contains('10.0.0.0/8', '::ffff:10.9.8.7')).toBe(true); // IPv4-mapped is IPv4
    expect(contains('::/0', '::ffff:10.9.8.7')).toBe(false);
    expect(contains('::/0', '10.1.2.3')).toBe(false);
    expect(contains('0.0.0.0/0', '2001:db8::1')).toBe(false);
    expect(contains('::/0', '::1.2.3.4')).toBe(true); // IPv4-compatible stays IPv6
    expect(contains('2001:db8::/32', '2001:DB8:0:0:0:0:0:1')).toBe(true);
    expect(contains('2001:db8::/32', '2001:db9::1')).toBe(false);
    expect(contains('::/0', 'fe80::1%eth0')).toBeUndefined(); // zones are rejected
    expect(contains('::/0', '1:2:3:4:5:6:7::8')).toBeUndefined(); // :: must stand for a zero group
    expect(contains('::/0', '1:2:3:4:5:6:7:8')).toBe(true);
    expect(contains('::/0', '1.2.3.4::')).toBeUndefined();
    expect(contains('::/0', '12345::')).toBeUndefined();
    expect(contains('::/0', '::')).toBe(true);
    expect(contains('10.0.0.0/8', '10.1.0.0/16')).toBe(true); // a block: both ends inside
    expect(contains('10.0.0.0/8', '10.0.0.0/7')).toBe(false);
    expect(contains('10.0.0.0/8', 'x')).toBeUndefined();
    expect(contains('10.0.0.0/33', '10.1.2.3')).toBeUndefined();
    expect(contains('10.0.0.0/08', '10.1.2.3')).toBe(true); // Go's dtoi takes leading zeros
    expect(contains('::ffff:10.0.0.0/104', '10.1.2.3')).toBe(true); // mapped block: the last 32 bits
  });

  it('reads RFC 3339 timestamps like Go and OPA, to exact int64 nanoseconds', () => {
    const p = module('true');
    const ns = (s: string): unknown => p.call('time.parse_rfc3339_ns', [s]);
    expect(ns('1970-01-01T00:00:00Z')).toBe(0n);
    expect(ns('1970-01-01T00:00:01.5+01:00')).toBe(-3_598_500_000_000n);
    expect(ns('2024-02-29T12:00:00Z')).toBe(1_709_208_000_000_000_000n);
    expect(ns('2023-02-29T12:00:00Z')).toBeUndefined();
    expect(ns('2024-04-31T12:00:00Z')).toBeUndefined();
    expect(ns('2000-01-01T00:00:00.1234567899Z')).toBe(946_684_800_123_456_789n); // truncated, not rounded
    expect(ns('2262-04-11T23:47:16.854775807Z')).toBe(9_223_372_036_854_775_807n);
    expect(ns('2262-04-11T23:47:16.854775808Z')).toBeUndefined();
    expect(ns('1677-09-21T00:12:43.145224192Z')).toBe(-9_223_372_036_854_775_808n);
    expect(ns('1677-09-21T00:12:43.145224191Z')).toBeUndefined();
    expect(() => ns('2024-03-11T9:30:00Z')).toThrow(RegoModelError); // Go's lenient fallback is not modelled
    const midnightEast = ns('1970-01-01T00:00:00+23:59');
    expect(p.call('time.clock', [midnightEast as bigint])).toEqual([0, 1, 0]);
    expect(p.call('time.weekday', [midnightEast as bigint])).toBe('Wednesday');
    expect(p.call('time.clock', [ns('2024-03-09T16:59:59.999999999+01:00') as bigint])).toEqual([15, 59, 59]);
    expect(p.call('time.weekday', [ns('2024-03-10T10:15:00Z') as bigint])).toBe('Sunday');
    expect(p.call('time.weekday', [ns('1677-09-21T00:12:43.145224192Z') as bigint])).toBe('Tuesday');
    expect(p.call('time.clock', [1.5])).toBeUndefined();
  });

  it('rejects what it does not model, so the translator cannot drift unnoticed', () => {
    const bad = [
      'package t\nr {\n\tinput.x == 1 with input as {}\n}\n',
      'package t\nr {\n\tsome x\n}\n',
      'package t\nr {\n\tx = input.y\n}\n',
      'package t\nr {\n\tupper(input.x) == "A"\n}\n',
      'package t\nr {\n\tinput.x == 1; input.y == 2\n}\n',
      'package t\nr {\n\tinput.x + 1 == 2\n}\n',
      'package t\nr {\n\ty == 1\n}\n',
      'package t\nr {\n\tinput.x == 1\n} else = false {\n\ttrue\n}\n',
      'package t\nr {\n\tinput.x in ["a"]\n}\n', // `in` is not a v0 keyword
      'package t\nr if {\n\ttrue\n}\n', // nor is `if`
      'package t\nimport rego.v1\nr {\n\ttrue\n}\n', // v1 needs `if`
      'package t\nimport future.keywords.in\nr {\n\ttrue\n}\n',
      'package t\nr {\n\tdata.t.q\n}\n',
      'package t\nr {\n\tinput.not == 1\n}\n',
      'package t\nr {\n\tr\n}\n',
      'package t\nr {\n\tx := 1\n\tx := 2\n}\n',
      'package t\nr {\n\tnot x := 1\n}\n',
      'package t\nr {\n\tinput.x == 12345678901234567890\n}\n',
      "package t\nr {\n\tinput.x == 'a'\n}\n",
    ];
    for (const text of bad) expect(() => loadPolicy(text), text).toThrow(RegoModelError);
  });

  it('reports conflicting function outputs like OPA (eval_conflict_error)', () => {
    const p = loadPolicy('package t\nf(x) = 1 {\n\tx == x\n}\nf(x) = 2 {\n\tis_number(x)\n}\n');
    expect(p.call('f', ['a'])).toBe(1);
    expect(() => p.call('f', [1])).toThrow(/conflicting/);
  });
});

// ---------------------------------------------------------------------------------------------
// The constructs of the directory section (rego.ts directorySection), each pinned to OPA's behaviour.

describe('the OPA model: constant objects, partial object rules and reference iteration', () => {
  // A module shaped like the translator's directory section, in both syntaxes.
  const section = (v: 0 | 1): string => {
    const eq = v === 1 ? ':=' : '=';
    const open = (head: string): string => (v === 1 ? `${head.replace(' = ', ' := ')} if {` : `${head} {`);
    return [
      'package acl',
      ...(v === 1 ? ['', 'import rego.v1'] : []),
      '',
      `acl_directory ${eq} {`,
      '\t"group": {',
      '\t\t"g-1": {"x-y": "v", "tier": "gold"}',
      '\t},',
      '\t"user": {',
      '\t\t"alice": {"flag": false, "meta": {"a": [1, 2.5, {"b": null}], "not": true}, "nothing": null, "roles": ["admin"], "é": "\\u00e9"},',
      '\t\t"𝒜": {"roles": []}',
      '\t}',
      '}',
      '',
      open('acl_principal[k] = x'),
      '\tx := input.principal[k]',
      '}',
      open('acl_principal[k] = x'),
      '\tx := acl_directory[input.principal.type][input.principal.id][k]',
      '\tnot acl_has_key(input.principal, k)',
      '}',
      open('acl_has_key(o, k)'),
      '\t_ = o[k]',
      '}',
      open('acl_in(x, c)'),
      '\tis_array(c)',
      '\tc[_] == x',
      '}',
      open('acl_in(x, c)'),
      '\tis_object(c)',
      '\tis_string(x)',
      '\t_ = c[x]',
      '}',
      open('acl_size(x) = n'),
      '\tis_object(x)',
      '\tn := count(x)',
      '}',
      open('admin'),
      '\tacl_in("admin", acl_principal.roles)',
      '}',
      open('dashed'),
      '\tacl_principal["x-y"] == "v"',
      '}',
      open('has_flag'),
      '\tacl_in("flag", acl_principal)',
      '}',
      open('has_nothing'),
      '\tacl_in("nothing", acl_principal)',
      '}',
      open('size_is'),
      '\tacl_size(acl_principal) == input.n',
      '}',
      open('whole_is_object'),
      '\tis_object(acl_principal)',
      '}',
      open('no_props'),
      '\tacl_size(object.get(input, "actionProperties", {})) == 0',
      '}',
      open('soft'),
      '\tinput.actionProperties.soft == true',
      '}',
      '',
    ].join('\n');
  };
  const doc = (principal: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    principal,
    action: 'read',
    resource: { type: 'doc' },
    ...extra,
  });

  for (const v of [0, 1] as const) {
    it(`loads a multi-line constant object rule with nested values (Rego v${v}: \`acl_directory ${v === 1 ? ':=' : '='} {...}\`)`, () => {
      const p = loadPolicy(section(v));
      expect(p.version).toBe(v);
      // Newlines inside braces and brackets are insignificant in OPA's scanner; a complete rule
      // without a body is a constant (OPA docs, "Rules": `pi := 3.14159`).
      expect(p.value('acl_directory', {})).toEqual({
        group: { 'g-1': { 'x-y': 'v', tier: 'gold' } },
        user: {
          alice: { flag: false, meta: { a: [1, 2.5, { b: null }], not: true }, nothing: null, roles: ['admin'], é: 'é' },
          𝒜: { roles: [] },
        },
      });
    });

    it(`gives a partial object rule its full extent: the input's keys over the directory's (Rego v${v})`, () => {
      const p = loadPolicy(section(v));
      // OPA topdown TestTopDownPartialObjectDoc: `p[k] = v { b[k] = v }` is the object of every pair.
      expect(p.value('acl_principal', doc({ type: 'user', id: 'alice', roles: 'mine' }))).toEqual({
        type: 'user',
        id: 'alice',
        roles: 'mine',
        flag: false,
        meta: { a: [1, 2.5, { b: null }], not: true },
        nothing: null,
        é: 'é',
      });
      // Not in the directory, or an id that is not a string: only the input's keys.
      expect(p.value('acl_principal', doc({ type: 'user', id: 'bob', a: 1 }))).toEqual({ type: 'user', id: 'bob', a: 1 });
      expect(p.value('acl_principal', doc({ type: 'user', id: 7 }))).toEqual({ type: 'user', id: 7 });
      expect(p.value('acl_principal', doc({ type: ['user'], id: 'alice' }))).toEqual({ type: ['user'], id: 'alice' });
      // No body holds: the empty object, which is defined (TestTopDownPartialObjectDoc "var/var key" is `{}`).
      expect(p.value('acl_principal', doc({}))).toEqual({});
      expect(p.rule('whole_is_object', doc({}))).toBe(true);
      expect(p.rule('size_is', doc({}, { n: 0 }))).toBe(true);
    });

    it(`looks keys up in a partial object, dotted and bracketed, undefined when absent (Rego v${v})`, () => {
      const p = loadPolicy(section(v));
      expect(p.rule('admin', doc({ type: 'user', id: 'alice' }))).toBe(true);
      expect(p.rule('admin', doc({ type: 'user', id: 'alice', roles: ['reader'] }))).toBe(false); // the input wins, whole
      expect(p.rule('admin', doc({ type: 'user', id: '𝒜' }))).toBe(false);
      expect(p.rule('admin', doc({ type: 'user', id: 'carol' }))).toBe(false); // undefined: the statement fails
      expect(p.rule('dashed', doc({ type: 'group', id: 'g-1' }))).toBe(true);
      expect(p.rule('dashed', doc({ type: 'user', id: 'g-1' }))).toBe(false); // ids are per type
    });

    it(`uses a partial object whole: count, is_object and key tests that count false and null values (Rego v${v})`, () => {
      const p = loadPolicy(section(v));
      const alice = doc({ type: 'user', id: 'alice' });
      expect(p.rule('size_is', { ...alice, n: 7 })).toBe(true); // type, id and five directory keys
      expect(p.rule('size_is', { ...doc({ type: 'user', id: 'alice', flag: 1 }), n: 7 })).toBe(true); // a collision adds no key
      // `_ = o[k]` unifies with any value, so false and null are present (OPA docs: `_` is a wildcard).
      expect(p.rule('has_flag', alice)).toBe(true);
      expect(p.rule('has_nothing', alice)).toBe(true);
      expect(p.rule('has_flag', doc({ type: 'user', id: 'bob' }))).toBe(false);
      expect(p.call('acl_has_key', [{ a: false }, 'a'])).toBe(true);
      expect(p.call('acl_has_key', [{ a: null }, 'a'])).toBe(true);
      expect(p.call('acl_has_key', [{ a: null }, 'b'])).toBeUndefined();
      expect(p.call('acl_has_key', [['x'], 'a'])).toBeUndefined();
    });

    it(`keeps the input's value when a key has one there, even false or null (Rego v${v})`, () => {
      const p = loadPolicy(section(v));
      const got = p.value('acl_principal', doc({ type: 'user', id: 'alice', flag: null, roles: false, meta: {} }));
      expect(got).toMatchObject({ flag: null, roles: false, meta: {}, nothing: null });
    });

    it(`reads a whole root that may be absent through object.get, like context (Rego v${v})`, () => {
      const p = loadPolicy(section(v));
      expect(p.rule('no_props', doc({}))).toBe(true); // no actionProperties at all
      expect(p.rule('no_props', doc({}, { actionProperties: {} }))).toBe(true);
      expect(p.rule('no_props', doc({}, { actionProperties: { soft: false } }))).toBe(false);
      expect(p.rule('no_props', doc({}, { actionProperties: null }))).toBe(false); // acl_size(null) is undefined
      expect(p.rule('soft', doc({}))).toBe(false);
      expect(p.rule('soft', doc({}, { actionProperties: { soft: true } }))).toBe(true);
      expect(p.call('object.get', [{ a: false }, 'a', 1])).toBe(false); // a present false is not the default
      expect(p.call('object.get', [{}, 'a', {}])).toEqual({});
    });
  }

  it('binds a variable by iterating a reference: object keys, array indices, nothing for a scalar', () => {
    const p = loadPolicy(
      ['package t', 'keys[k] = x {', '\tx := input.principal.c[k]', '}', 'pairs[k] = x {', '\tx := input.principal.c[k][_]', '}'].join(
        '\n',
      ),
    );
    expect(p.value('keys', input({ c: { a: 1, b: false, c: null } }))).toEqual({ a: 1, b: false, c: null });
    expect(p.value('keys', input({ c: 'abc' }))).toEqual({});
    expect(p.value('keys', input({}))).toEqual({});
    // An array binds k to its indices, which are not strings: legal in OPA, outside the model.
    expect(() => p.value('keys', input({ c: ['x'] }))).toThrow(RegoModelError);
    expect(() => p.value('keys', input({ c: [] }))).not.toThrow();
    // One key with two values: OPA's eval_conflict_error "object keys must be unique".
    expect(() => p.value('pairs', input({ c: { a: [1, 2] } }))).toThrow(/object keys must be unique/);
    expect(p.value('pairs', input({ c: { a: [1, 1], b: [2] } }))).toEqual({ a: 1, b: 2 }); // the same pair twice is fine
  });

  it('raises the conflict between two bodies of a partial object rule, as OPA does', () => {
    const conflicting = loadPolicy(
      [
        'package t',
        'p[k] = x {',
        '\tx := input.principal[k]',
        '}',
        'p[k] = x {',
        '\tx := input.resource[k]',
        '}',
        'r {',
        '\tp.type == "user"',
        '}',
      ].join('\n'),
    );
    // OPA docs, eval_conflict_error "object keys must be unique": raised for partial rules building objects.
    expect(() => conflicting.rule('r', input({}))).toThrow(/object keys must be unique/); // "type": "user" vs "doc"
    expect(conflicting.rule('r', { ...input({}), resource: { type: 'user', x: 1 } })).toBe(true); // equal values agree
    expect(conflicting.value('p', { ...input({}), resource: { type: 'user', x: 1 } })).toEqual({ type: 'user', x: 1 });
  });

  it('rejects the forms around partial objects that it does not model', () => {
    const bad = [
      'package t\np[x] {\n\tx := input.a[_]\n}\n', // a partial set rule
      'package t\np["a"] = 1 {\n\ttrue\n}\n', // a constant key
      'package t\np[k] = 1 {\n\tinput.a == 1\n}\n', // k is unsafe: no body binds it
      'package t\np[k] = 1\n', // no body
      'package t\np[k][j] = 1 {\n\tx := input.a[k]\n\ty := input.b[j]\n}\n', // a nested ref head
      'package t\np[k] = x {\n\tx := input.a[k][k]\n}\n', // a join inside one reference
      'package t\np[k] = x {\n\tinput.a[k] == x\n}\n', // iteration outside `x := ref`
      'package t\np[k] = x {\n\tx := input.a[k]\n}\np = 1\n', // a partial object and a complete rule of one name
      'package t\ndefault p = {}\np[k] = x {\n\tx := input.a[k]\n}\n', // a default for a partial object
      'package t\np[k] = x {\n\tnot input.b[k]\n\tx := input.a[k]\n}\n', // OPA would reorder for safety; the model does not
      'package t\nx = {\n\t"a": 1,\n\t"a": 2\n}\n', // a duplicate key in a literal
      'package t\nx = {\n\t"a": 1,\n}\n', // a trailing comma
      'package t\nimport rego.v1\np[k] := x {\n\tx := input.a[k]\n}\n', // v1 needs `if`
    ];
    for (const text of bad) expect(() => loadPolicy(text), text).toThrow(RegoModelError);
  });
});
