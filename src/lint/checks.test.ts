// One describe per check: what it finds, and the legal look-alikes it leaves alone.
import { describe, expect, it } from 'vitest';
import { type Finding, type LintObject, lintObjects } from './index.ts';

const API = 'acl.policyagent.dev/v1alpha1';
const NS = 't';

function object(kind: LintObject['kind'], name: string, spec: unknown, annotations?: Record<string, string>): LintObject {
  const metadata = { name, namespace: NS, ...(annotations ? { annotations } : {}) };
  return { kind, namespace: NS, name, raw: { apiVersion: API, kind, metadata, spec } };
}

const rule = (name: string, spec: Record<string, unknown> = {}): LintObject =>
  object('Rule', name, { state: 'Enforced', subjectType: 'user', actions: ['read'], resourceType: 'document', ...spec });
const bundle = (name: string, spec: Record<string, unknown> = {}): LintObject => object('Bundle', name, { connector: 'c', ...spec });
const connector = (name = 'c'): LintObject => object('Connector', name, {});
const directory = (name: string, entities: unknown[]): LintObject => object('Directory', name, { entities });
/** A tenant with nothing to say about it but what the test adds. */
const clean = (): LintObject[] => [connector(), bundle('b')];

/** The findings of `code` only, as [object name, message] pairs. */
function found(code: string, objects: LintObject[]): [string, string][] {
  return lintObjects(objects)
    .filter((f: Finding) => f.code === code)
    .map((f) => [f.name, f.message]);
}
const names = (code: string, objects: LintObject[]): string[] => found(code, objects).map(([n]) => n);

describe('PropertiesPath', () => {
  it('finds conditions written in the request shape, and names the flattened path', () => {
    const findings = lintObjects([
      ...clean(),
      rule('can-read-own', { condition: 'resource.properties.ownerID == principal.properties["email"] && "x" in principal.properties' }),
    ]).filter((f) => f.code === 'PropertiesPath');
    expect(findings.map((f) => [f.message.split(',')[0], f.hint])).toEqual([
      ['the condition reads resource.properties.ownerID', 'read resource.ownerID instead'],
      ['the condition reads principal.properties.email', 'read principal.email instead'],
      ['the condition reads principal.properties', 'read principal itself, e.g. "email" in principal'],
    ]);
  });

  it("finds an AuthZEN action's properties and points to actionProperties", () => {
    const [f] = lintObjects([...clean(), rule('soft', { condition: 'action.properties.soft == true' })]).filter(
      (x) => x.code === 'PropertiesPath',
    );
    expect(f?.hint).toBe('read actionProperties.soft instead');
  });

  it('leaves flattened paths, context.properties, archived rules, and a Directory property named properties alone', () => {
    expect(
      names('PropertiesPath', [
        ...clean(),
        rule('flat', { condition: 'principal.email == resource.owner && context.properties.x == 1' }),
        rule('old', { state: 'Archived', condition: 'principal.properties.email == "a"' }),
        rule('real', { subjectType: 'app', condition: 'principal.properties.tier == "gold"' }),
        directory('apps', [{ type: 'app', id: 'a1', properties: { properties: { tier: 'gold' } } }]),
      ]),
    ).toEqual([]);
  });
});

describe('StateNotSet', () => {
  it('finds a Rule without spec.state, which is silently a Draft', () => {
    const unset = object('Rule', 'forgot', { subjectType: 'user', actions: ['read'], resourceType: 'document' });
    expect(names('StateNotSet', [...clean(), rule('set'), rule('draft', { state: 'Draft' }), unset])).toEqual(['forgot']);
  });
});

describe('NegatedMissing', () => {
  it('finds a path read only under "!", which a request without it makes an error, not true', () => {
    const findings = lintObjects([
      ...clean(),
      rule('unless-held', { condition: 'resource.owner == principal.id && !(resource.legalHold == true)' }),
      rule('not-in', { condition: '!(context.channel in ["api"]) && !principal.tags[0].startsWith("x")' }),
    ]).filter((f) => f.code === 'NegatedMissing');
    expect(findings.map((f) => [f.name, f.message.split(' only')[0], f.hint.split(',')[0]])).toEqual([
      ['not-in', 'the condition reads context.channel', 'guard it'],
      ['not-in', 'the condition reads principal.tags[0]', 'guard it'],
      ['unless-held', 'the condition reads resource.legalHold', 'guard it'],
    ]);
    expect(findings.find((f) => f.name === 'unless-held')?.hint).toMatch(/^guard it, e\.g\. !\("legalHold" in resource\) \|\| /);
    expect(findings.find((f) => f.message.includes('tags[0]'))?.hint).toMatch(/^guard it, e\.g\. !\(size\(principal\.tags\) > 0\)/);
  });

  it('leaves a guarded path, one also read outside the "!", the action, and archived rules alone', () => {
    expect(
      names('NegatedMissing', [
        ...clean(),
        rule('guarded', { condition: '!("legalHold" in resource) || !(resource.legalHold == true)' }),
        rule('outside', { condition: 'principal.level >= 1 && !(principal.level > 5)' }),
        rule('action', { condition: '!(action == "delete")' }),
        rule('old', { state: 'Archived', condition: '!(resource.locked == true)' }),
      ]),
    ).toEqual([]);
  });
});

describe('RuleNotBundled', () => {
  it('finds a deployed rule that no Bundle of the tenant selects', () => {
    const objects = [
      connector(),
      bundle('docs', { entityTypes: ['document'] }),
      rule('in'),
      rule('approved-out', { state: 'Approved', resourceType: 'report' }),
      rule('draft-out', { state: 'Draft', resourceType: 'report' }),
    ];
    expect(names('RuleNotBundled', objects)).toEqual(['approved-out']);
    const [f] = lintObjects([bundle('zeta', { entityTypes: ['x'] }), ...objects]).filter((x) => x.code === 'RuleNotBundled');
    expect(f?.hint).toBe('add user or report to the entityTypes of a Bundle (docs, zeta), or add a Bundle without entityTypes');
    expect(names('RuleNotBundled', [...objects, bundle('all')])).toEqual([]);
  });

  it('says nothing while the tenant has no Bundle (the service alone decides)', () => {
    expect(names('RuleNotBundled', [rule('r', { resourceType: 'report' })])).toEqual([]);
  });
});

describe('BundleSelectsNoRules', () => {
  it('finds a Bundle whose selection holds no deployed rule', () => {
    const objects = [
      connector(),
      bundle('reports', { entityTypes: ['report'] }),
      bundle('docs', { entityTypes: ['document'] }),
      rule('r'),
      rule('draft', { state: 'Draft', resourceType: 'report' }),
    ];
    expect(found('BundleSelectsNoRules', objects)).toEqual([
      ['reports', 'selects no deployed rule (entityTypes: report): the OPA sidecars that load it deny every request'],
    ]);
    expect(names('BundleSelectsNoRules', [connector(), bundle('all'), rule('draft', { state: 'Suspended' })])).toEqual(['all']);
  });
});

describe('EntityTypeUnused', () => {
  it('finds an entityTypes entry no rule uses, and suggests the near one', () => {
    const f = lintObjects([connector(), bundle('b', { entityTypes: ['docment', 'user', 'invoice'] }), rule('r')]).filter(
      (x) => x.code === 'EntityTypeUnused',
    );
    expect(f.map((x) => [x.message.split(',')[0], x.hint])).toEqual([
      ['entityTypes lists "docment"', 'did you mean "document"? Otherwise remove it'],
      ['entityTypes lists "invoice"', 'fix the type, or remove it from entityTypes'],
    ]);
  });

  it('counts rules of every state as using their types', () => {
    expect(
      names('EntityTypeUnused', [
        connector(),
        bundle('b', { entityTypes: ['report'] }),
        rule('r', { state: 'Draft', resourceType: 'report' }),
      ]),
    ).toEqual([]);
  });
});

describe('ConnectorUnused', () => {
  it('finds a Connector that no Bundle names', () => {
    expect(names('ConnectorUnused', [connector('c'), connector('spare'), bundle('b'), rule('r')])).toEqual(['spare']);
  });
});

describe('DirectoryTypeUnused', () => {
  it('finds entities of a type no rule uses', () => {
    const f = lintObjects([
      ...clean(),
      rule('r', { condition: 'principal.role == "admin"' }),
      directory('people', [
        { type: 'usr', id: 'alice', properties: { role: 'admin' } },
        { type: 'user', id: 'bob', properties: { role: 'member' } },
      ]),
    ]).filter((x) => x.code === 'DirectoryTypeUnused');
    expect(f.map((x) => [x.message.split(',')[0], x.hint])).toEqual([
      ['lists entities of type "usr"', 'did you mean "user"? Otherwise remove these entities'],
    ]);
  });
});

describe('DirectoryPropertyUnread', () => {
  const people = directory('people', [
    { type: 'user', id: 'alice', properties: { role: 'admin', email: 'a@x', org: { unit: 'x' }, 'x-y': 1, tags: ['a'] } },
    { type: 'document', id: 'd1', properties: { owner: 'alice', size: 3 } },
  ]);
  const unread = (...rules: LintObject[]): string[] =>
    found('DirectoryPropertyUnread', [...clean(), people, ...rules]).map(
      ([, m]) => /property "([^"]+)" of (\w+)/.exec(m)?.slice(1).join(' of ') ?? m,
    );

  it('finds properties no condition reads, per entity type', () => {
    expect(unread(rule('r', { condition: 'principal.role == "admin" && resource.owner == principal.id' }))).toEqual([
      'size of document',
      'email of user',
      'org of user',
      'tags of user',
      'x-y of user',
    ]);
  });

  it('counts a nested path, an index, a quoted key and a list element as reading the top-level property', () => {
    const r = rule('r', {
      condition: 'principal.org.unit == "x" && principal["x-y"] == 1 && principal.tags[0] == "a" && principal.role == "a"',
    });
    expect(unread(r)).toEqual(['owner of document', 'size of document', 'email of user']);
  });

  it('counts reading the whole entity (in, size, equality) as reading every property', () => {
    expect(unread(rule('r', { condition: '"email" in principal && size(resource) > 0' }))).toEqual([]);
    expect(unread(rule('r', { subjectType: 'document', resourceType: 'user', condition: 'principal == resource' }))).toEqual([]);
  });

  it('reads a property of a type through principal for its subject rules and resource for its resource rules, never crosswise', () => {
    // resource.email of a document rule reads documents, not users; principal.size reads users.
    expect(unread(rule('r', { condition: 'resource.email == "a" && principal.size == 1' }))).toContain('email of user');
    expect(unread(rule('r', { condition: 'resource.email == "a" && principal.size == 1' }))).toContain('size of document');
    expect(
      unread(rule('r', { subjectType: 'document', resourceType: 'user', condition: 'resource.email == "a" && principal.size == 1' })),
    ).not.toContain('email of user');
  });

  it('names how to read the property in its hint', () => {
    const [f] = lintObjects([...clean(), people, rule('r')]).filter(
      (x) => x.code === 'DirectoryPropertyUnread' && x.message.includes('"x-y"'),
    );
    expect(f?.hint).toBe('remove it, or read it in a condition: principal["x-y"] in a rule whose subjectType is user');
  });
});

describe('DuplicateRule', () => {
  it('finds a deployed rule deciding exactly as an earlier one, however the condition is spelled; drafts are left alone', () => {
    const objects = [
      ...clean(),
      rule('b-copy', { actions: ['write', 'read'], condition: "principal.team  ==\n resource['team']" }),
      rule('a-first', { actions: ['read', 'write'], condition: 'principal.team == resource.team' }),
      rule('c-other-action', { actions: ['read'], condition: 'principal.team == resource.team' }),
      rule('d-true', { actions: ['delete'], condition: 'true' }),
      rule('e-none', { actions: ['delete'], state: 'Approved' }),
      rule('f-draft', { state: 'Draft', actions: ['delete'] }),
      rule('g-suspended', { state: 'Suspended', actions: ['delete'] }),
    ];
    const message = (earlier: string): string =>
      `decides exactly as rule ${earlier}: both are deployed, with the same subjectType, actions, resourceType and condition`;
    expect(found('DuplicateRule', objects)).toEqual([
      ['b-copy', message('a-first')],
      ['e-none', message('d-true')],
    ]);
  });
});

describe('facts shared between rules and passes', () => {
  const frozen = <T>(value: T): T => {
    if (value !== null && typeof value === 'object') {
      for (const v of Object.values(value)) frozen(v);
      Object.freeze(value);
    }
    return value;
  };

  it('gives the same findings pass after pass, with specs that cannot change and empty lists shared', () => {
    const objects = frozen([
      ...clean(),
      ...Array.from({ length: 60 }, (_, i) =>
        rule(`r-${String(i).padStart(2, '0')}`, {
          actions: i % 3 === 0 ? ['write', 'read'] : ['read'],
          ...(i % 4 === 0 ? {} : { condition: i % 4 === 1 ? 'principal.team == resource.team' : `!(principal.level > ${i % 5})` }),
        }),
      ),
    ]);
    const first = lintObjects(objects);
    // Other rules linted in between reuse the shared empty sets and lists; they must come back empty.
    lintObjects(Array.from({ length: 40 }, (_, i) => rule(`o-${i}`, { condition: `resource.level >= ${i} || "x" in principal` })));
    expect(lintObjects(objects)).toEqual(first);
    expect(new Set(first.map((f) => f.code))).toEqual(new Set(['DuplicateRule', 'NegatedMissing']));
  });
});
