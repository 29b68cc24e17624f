import { describe, expect, it } from 'vitest';
import { compileCondition, compileConditionFn, ERROR, TRUE, toDecisionInput } from './index.ts';

type Outcome = 'true' | 'false' | 'error';

/** Evaluates a condition on an input given as {principal, resource, context, action}. */
function run(condition: string, input: { principal?: object; resource?: object; context?: object; action?: string } = {}): Outcome {
  const compiled = compileCondition(condition);
  if (!compiled.ok) throw new Error(compiled.error.message);
  const doc = toDecisionInput({ principal: {}, resource: {}, context: {}, action: 'read', ...input });
  if (typeof doc === 'string') throw new Error(doc);
  const t = compileConditionFn(compiled.cond)(doc);
  return t === TRUE ? 'true' : t === ERROR ? 'error' : 'false';
}

function rejection(condition: string): string {
  const compiled = compileCondition(condition);
  if (compiled.ok) throw new Error(`${condition} was accepted`);
  return compiled.error.message;
}

describe('supported constructs evaluate as CEL says', () => {
  it.each<[string, object, Outcome]>([
    // literals and attribute paths
    ['principal.team == resource.team', { principal: { team: 'a' }, resource: { team: 'a' } }, 'true'],
    ['principal.org.unit == "legal"', { principal: { org: { unit: 'legal' } } }, 'true'],
    ['resource["x-y"] == 1', { resource: { 'x-y': 1 } }, 'true'],
    ['resource.tags[1] == "b"', { resource: { tags: ['a', 'b'] } }, 'true'],
    ['resource.tags[2] == "b"', { resource: { tags: ['a', 'b'] } }, 'error'],
    ['action == "read"', { action: 'read' }, 'true'],
    ['principal.n == null', { principal: { n: null } }, 'true'],
    ['principal.l == [1, "a", true, null]', { principal: { l: [1.0, 'a', true, null] } }, 'true'],
    ['principal.b == true', { principal: { b: true } }, 'true'],
    ['principal.x == -1.5', { principal: { x: -1.5 } }, 'true'],
    // comparisons
    ['principal.level >= 3', { principal: { level: 3 } }, 'true'],
    ['principal.level > 3', { principal: { level: 3 } }, 'false'],
    ['principal.level < 3.5', { principal: { level: 3 } }, 'true'],
    ['principal.level <= 2', { principal: { level: 3 } }, 'false'],
    ['principal.name < resource.name', { principal: { name: 'a' }, resource: { name: 'b' } }, 'true'],
    ['principal.flag > false', { principal: { flag: true } }, 'true'],
    ['principal.level != 3', { principal: { level: '3' } }, 'true'],
    // logic
    ['principal.a && principal.b', { principal: { a: true, b: false } }, 'false'],
    ['principal.a || principal.b', { principal: { a: false, b: true } }, 'true'],
    ['!principal.a', { principal: { a: false } }, 'true'],
    ['true', {}, 'true'],
    ['false', {}, 'false'],
    // membership
    ['"admin" in principal.roles', { principal: { roles: ['user', 'admin'] } }, 'true'],
    ['"admin" in principal.roles', { principal: { roles: { admin: false } } }, 'true'],
    ['principal.region in ["eu", "us"]', { principal: { region: 'us' } }, 'true'],
    ['principal.region in ["eu", "us"]', { principal: { region: 'cn' } }, 'false'],
    // strings and size
    ['resource.path.startsWith("/home/")', { resource: { path: '/home/a' } }, 'true'],
    ['principal.email.endsWith("@acme")', { principal: { email: 'a@acme' } }, 'true'],
    ['resource.title.contains("draft")', { resource: { title: 'a draft' } }, 'true'],
    ['size(resource.tags) == 2', { resource: { tags: ['a', 'b'] } }, 'true'],
    ['resource.tags.size() == 2', { resource: { tags: { a: 1, b: 2 } } }, 'true'],
    ['size(resource.name) == 1', { resource: { name: '𝒜' } }, 'true'],
    // network
    ['cidr("10.0.0.0/8").containsIP(context.ipAddress)', { context: { ipAddress: '10.1.2.3' } }, 'true'],
    ['cidr("10.0.0.0/8").containsIP(context.ipAddress)', { context: { ipAddress: '11.1.2.3' } }, 'false'],
    ['cidr("10.0.0.0/8").containsIP(ip(context.ipAddress))', { context: { ipAddress: '::ffff:10.1.2.3' } }, 'true'],
    ['cidr("2001:db8::/32").containsIP(context.ipAddress)', { context: { ipAddress: '2001:DB8::1' } }, 'true'],
    ['cidr("2001:db8::/32").containsIP(context.ipAddress)', { context: { ipAddress: '10.1.2.3' } }, 'false'],
    ['cidr("10.0.0.0/8").containsIP(context.ipAddress)', { context: { ipAddress: '010.1.2.3' } }, 'error'],
    ['cidr("10.0.0.0/8").containsIP(context.ipAddress)', { context: { ipAddress: '10.1.2.3/32' } }, 'error'],
    ['cidr("10.0.0.0/8").containsIP(context.ipAddress)', { context: { ipAddress: 10 } }, 'error'],
    // time (UTC)
    ['timestamp(context.timeOfDay).getHours() == 8', { context: { timeOfDay: '2024-03-11T09:30:00+01:00' } }, 'true'],
    ['timestamp(context.timeOfDay).getMinutes() == 30', { context: { timeOfDay: '2024-03-11T09:30:00.25Z' } }, 'true'],
    ['timestamp(context.timeOfDay).getDayOfWeek() == 1', { context: { timeOfDay: '2024-03-11T09:30:00Z' } }, 'true'],
    ['timestamp(context.timeOfDay).getDayOfWeek() == 0', { context: { timeOfDay: '2024-03-11T00:30:00+01:00' } }, 'true'],
    ['timestamp(context.timeOfDay).getHours() == 9', { context: { timeOfDay: '2024-03-11t09:30:00z' } }, 'error'],
    ['timestamp(context.timeOfDay).getHours() == 9', { context: { timeOfDay: '2023-02-29T09:30:00Z' } }, 'error'],
    ['timestamp(context.timeOfDay).getHours() == 9', { context: { timeOfDay: '2263-01-01T09:30:00Z' } }, 'error'],
    ['timestamp(context.timeOfDay).getHours() == 9', { context: { timeOfDay: '1677-12-31T09:30:00Z' } }, 'error'],
    ['timestamp(context.timeOfDay).getDayOfWeek() == 5', { context: { timeOfDay: '1678-01-01T00:00:00+23:59' } }, 'true'],
    ['timestamp(context.timeOfDay).getHours() == 9', { context: { timeOfDay: '2024-02-30T09:30:00Z' } }, 'error'],
    ['timestamp(context.timeOfDay).getHours() == 9', { context: { timeOfDay: 9 } }, 'error'],
  ])('%s on %j is %s', (condition, input, outcome) => {
    expect(run(condition, input)).toBe(outcome);
  });
});

describe('the tricky cases of docs/rules.md', () => {
  it('a missing attribute is an error, and stays one under negation', () => {
    expect(run('principal.suspended == true')).toBe('error');
    expect(run('!(principal.suspended == true)')).toBe('error');
  });

  it('false absorbs an error in &&, true absorbs it in ||', () => {
    expect(run('principal.missing == 1 && principal.b == true', { principal: { b: false } })).toBe('false');
    expect(run('principal.missing == 1 || principal.b == true', { principal: { b: true } })).toBe('true');
    expect(run('principal.missing == 1 && principal.b == true', { principal: { b: true } })).toBe('error');
    expect(run('!(principal.a == true && principal.b == true)', { principal: { b: false } })).toBe('true');
  });

  it('== across types is false and != is true, numbers compare by value', () => {
    expect(run('resource.version == 3', { resource: { version: '3' } })).toBe('false');
    expect(run('resource.version != 3', { resource: { version: '3' } })).toBe('true');
    expect(run('resource.version == 3', { resource: { version: 3.0 } })).toBe('true');
    expect(run('resource.version != 3.0', { resource: { version: null } })).toBe('true');
  });

  it('ordering across types or with null is an error', () => {
    expect(run('principal.level >= 3', { principal: { level: '5' } })).toBe('error');
    expect(run('principal.level < 3', { principal: { level: null } })).toBe('error');
    expect(run('principal.a < principal.b', { principal: { a: null, b: null } })).toBe('error');
    expect(run('principal.a < principal.b', { principal: { a: [1], b: [2] } })).toBe('error');
  });

  it('a present null is not missing', () => {
    expect(run('principal.manager == null', { principal: { manager: null } })).toBe('true');
    expect(run('principal.manager == null', { principal: {} })).toBe('error');
  });

  it('a bare attribute is a condition only when it is a boolean; truthiness does not apply', () => {
    expect(run('principal.active', { principal: { active: true } })).toBe('true');
    expect(run('principal.active', { principal: { active: 'yes' } })).toBe('error');
    expect(run('principal.active', { principal: { active: 1 } })).toBe('error');
    expect(run('!principal.active', { principal: { active: 'yes' } })).toBe('error');
  });

  it('paths through non-objects are errors', () => {
    for (const org of ['acme', ['acme'], 1, null]) expect(run('principal.org.unit == "acme"', { principal: { org } })).toBe('error');
  });

  it('in on a map tests keys, including keys whose value is null or false; in on a scalar is an error', () => {
    expect(run('"a" in principal.m', { principal: { m: { a: null } } })).toBe('true');
    expect(run('"a" in principal.m', { principal: { m: { a: false } } })).toBe('true');
    expect(run('1 in principal.m', { principal: { m: { 1: true } } })).toBe('false');
    expect(run('principal.k in principal.m', { principal: { k: null, m: {} } })).toBe('error');
    expect(run('"a" in principal.s', { principal: { s: 'abc' } })).toBe('error');
    expect(run('null in [1, "high", true, null]')).toBe('true');
  });

  it('strings order by code point, not UTF-16 unit', () => {
    expect(run('resource.title > "\\uFFFD"', { resource: { title: '𝒜' } })).toBe('true');
    expect(run('resource.title < "\\uE000"', { resource: { title: '𝒜' } })).toBe('false');
  });

  it('size counts code points, and applies to lists and maps but not to numbers', () => {
    expect(run('size(resource.label) == 3', { resource: { label: 'a𝒜é' } })).toBe('true');
    expect(run('size(resource.label) == 3', { resource: { label: 3 } })).toBe('error');
  });

  it('applies no Unicode normalization', () => {
    expect(run('resource.title == "café"', { resource: { title: 'cafe\u0301' } })).toBe('false');
  });

  it('CEL escapes in conditions denote the same characters', () => {
    expect(run('principal.name == "\\u00e9"', { principal: { name: 'é' } })).toBe('true');
    expect(run('principal.name == "\\U0001D49C"', { principal: { name: '𝒜' } })).toBe('true');
  });

  it('replaces unpaired surrogates in the input by U+FFFD, as OPA does', () => {
    expect(run('resource.label == "\\uFFFD"', { resource: { label: '\ud835' } })).toBe('true');
  });

  it('string functions need strings on both sides', () => {
    expect(run('resource.path.startsWith(principal.home)', { resource: { path: '/a' }, principal: { home: 1 } })).toBe('error');
    expect(run('!resource.path.contains("x")', { resource: { path: ['x'] } })).toBe('error');
  });

  it('&& binds tighter than ||', () => {
    expect(run('principal.a || principal.b && principal.c', { principal: { a: true, b: false, c: false } })).toBe('true');
  });
});

describe('conditions outside the subset are rejected with the position and the construct', () => {
  it.each<[string, RegExp]>([
    ['principal.level + 1 > 3', /addition "\+" is not supported \(at line 1, column 17\)/],
    ['principal.a ? true : false', /conditional operator/],
    ['principal.tags.all(t, t != "x")', /macros/],
    ['has(principal.team)', /has\(\) is not supported; use "key" in principal/],
    ['user.team == "a"', /unknown name "user".*column 1\)/],
    ['principal.name.matches("a.*")', /function matches\(\) is not supported/],
    ['{"a": 1} == principal.m', /map literals/],
    ['principal.x in [principal.y]', /list literals may hold only literal values/],
    ['principal.level', /./], // accepted, see below
    ['size(principal.tags)', /size\(\.\.\.\) is a number, not a condition/],
    ['"yes"', /must be true or false/],
    ['principal.id == 9007199254740993', /too large/],
    ['b"abc" == principal.x', /bytes literals/],
    ['timestamp(context.t).getHours("Europe/Paris") == 1', /no time zone/],
    ['timestamp(context.t) == 1', /can only be read through/],
    ['cidr("10.0.0.0/33").containsIP(context.ip)', /is not a CIDR block/],
    ['cidr(context.block).containsIP(context.ip)', /takes one string literal/],
    ['(principal.a == 1) == true', /cannot be used as a value here/],
    ['principal.tags[-1] == "a"', /index must be/],
    ['principal.level >=', /syntax error at line 1, column/],
  ])('%s', (condition, message) => {
    if (condition === 'principal.level') {
      expect(compileCondition(condition).ok).toBe(true);
      return;
    }
    expect(rejection(condition)).toMatch(message);
  });

  it('counts lines and columns in multi-line conditions', () => {
    expect(rejection('principal.a == 1 &&\n  principal.b * 2 == 4')).toMatch(/line 2, column 15/);
  });
});
