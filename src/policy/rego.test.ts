import { describe, expect, it } from 'vitest';
import { ruleModelFor, type RuleOverrides } from '../../test/support/rules.ts';
import type { RuleModel } from './index.ts';
import { ruleTranslation, translate, translateRule } from './index.ts';

const model = (name: string, over: RuleOverrides = {}): RuleModel => ruleModelFor(name, over);

describe('Rego translation', () => {
  it('puts indexed equality statements first, then the condition', () => {
    const r = model('team-documents', {
      actions: ['read', 'write'],
      condition: 'principal.team == resource.team',
      description: "Members of a team may read and edit their team's documents.",
    });
    expect(translateRule(r, 0).text).toMatchInlineSnapshot(`
      "# Rule team-documents
      # Members of a team may read and edit their team's documents.
      # Condition: principal.team == resource.team
      allow {
      	input.principal.type == "user"
      	input.action == ["read", "write"][_]
      	input.resource.type == "document"
      	input.principal.team == input.resource.team
      }"
    `);
    expect(translateRule(r, 1).text).toContain('allow if {\n\tinput.principal.type == "user"\n\tinput.action in {"read", "write"}');
  });

  it('pushes negation down to guarded comparisons and names disjunctions as helper rules', () => {
    const r = model('groups-outside-legal-and-cn', {
      condition: '!(principal.org.unit == "legal" || principal.org.region == "cn") && !(principal.level < 2)',
    });
    expect(translateRule(r, 0).text).toMatchInlineSnapshot(`
      "# Rule groups-outside-legal-and-cn
      # Condition: !(principal.org.unit == "legal" || principal.org.region == "cn") && !(principal.level < 2)
      allow {
      	input.principal.type == "user"
      	input.action == "read"
      	input.resource.type == "document"
      	input.principal.org.unit != "legal"
      	input.principal.org.region != "cn"
      	is_number(input.principal.level)
      	input.principal.level >= 2
      }"
    `);
    const or = model('a-or-b', { condition: 'principal.a || !resource.b' });
    expect(translateRule(or, 1).text).toMatchInlineSnapshot(`
      "# Rule a-or-b
      # Condition: principal.a || !resource.b
      allow if {
      	input.principal.type == "user"
      	input.action == "read"
      	input.resource.type == "document"
      	rule_a_or_b_0
      }
      rule_a_or_b_0 if {
      	input.principal.a == true
      }
      rule_a_or_b_0 if {
      	input.resource.b == false
      }"
    `);
  });

  it('writes a whole policy: package acl, default deny, rules sorted by name, only the helpers used', () => {
    const rules = [
      model('zeta', { condition: '"admin" in principal.roles' }),
      model('alpha', {}),
      model('mid', { condition: '!resource.title.startsWith("draft") && size(resource.tags) > 2' }),
    ];
    expect(translate(rules, { regoVersion: 0, header: ['Bundle b of tenant acme'] })).toMatchInlineSnapshot(`
      "# Bundle b of tenant acme
      package acl

      default allow = false

      # Rule alpha
      allow {
      	input.principal.type == "user"
      	input.action == "read"
      	input.resource.type == "document"
      }

      # Rule mid
      # Condition: !resource.title.startsWith("draft") && size(resource.tags) > 2
      allow {
      	input.principal.type == "user"
      	input.action == "read"
      	input.resource.type == "document"
      	acl_not_starts_with(input.resource.title, "draft")
      	acl_size(input.resource.tags) > 2
      }

      # Rule zeta
      # Condition: "admin" in principal.roles
      allow {
      	input.principal.type == "user"
      	input.action == "read"
      	input.resource.type == "document"
      	acl_in("admin", input.principal.roles)
      }

      # size(): code points of a string, elements of a list, entries of a map.
      acl_size(x) = n {
      	is_string(x)
      	n := count(x)
      }
      acl_size(x) = n {
      	is_array(x)
      	n := count(x)
      }
      acl_size(x) = n {
      	is_object(x)
      	n := count(x)
      }

      # x in c: an element of a list, or a key of a map (tested as a key, so false and null values count).
      acl_in(x, c) {
      	is_array(c)
      	c[_] == x
      }
      acl_in(x, c) {
      	is_object(c)
      	is_string(x)
      	_ = c[x]
      }

      # startsWith is false (both must be strings).
      acl_not_starts_with(s, p) {
      	is_string(s)
      	is_string(p)
      	not startswith(s, p)
      }
      "
    `);
  });

  it('uses import rego.v1, if and := for Rego v1', () => {
    const text = translate([model('t', { condition: 'size(resource.tags) > 0 && timestamp(context.timeOfDay).getDayOfWeek() != 0' })], {
      regoVersion: 1,
    });
    expect(text).toContain('package acl\n\nimport rego.v1\n\ndefault allow := false');
    expect(text).toContain('acl_size(x) := n if {');
    expect(text).toContain('acl_weekdays := {"Sunday": 0,');
    expect(text).toContain('acl_timestamp_ns(s) := ns if {');
    expect(text).not.toMatch(/^\w[^\n]*\) = \w+ \{/m);
  });

  it('decides conditions without attributes at translation time', () => {
    expect(translateRule(model('never', { condition: '1 < "x" || false' }), 0).text).toContain('\tfalse\n}');
    expect(translateRule(model('always', { condition: 'size("ab") == 2' }), 0).text).not.toContain('acl_size');
  });

  it('drops helper rules made for a part that can never hold', () => {
    const text = translateRule(
      model('dead', { condition: '1 > 2 && ((principal.a || principal.b) && principal.c) || resource.d' }),
      0,
    ).text;
    expect(text).not.toContain('rule_dead_');
    expect(text).toContain('\tinput.resource.d == true\n}');
  });

  it('gives the same text for the same rules in any order', () => {
    const a = model('a', { condition: 'principal.x == 1' });
    const b = model('b', { condition: 'principal.y in ["q"]' });
    expect(translate([a, b], { regoVersion: 0 })).toBe(translate([b, a], { regoVersion: 0 }));
  });
});

describe('rule text cannot inject Rego', () => {
  const hostile = 'x"\n}\nallow { true }\n# ';

  it('keeps descriptions and conditions with newlines inside comments', () => {
    const r = model('evil', {
      description: `line one\nallow { true }\r\nline three\u2028allow { true }`,
      condition: 'principal.a == "b" ||\nprincipal.c == "d"',
    });
    const text = translateRule(r, 0).text;
    for (const line of text.split('\n')) {
      if (line.includes('allow { true }')) expect(line.startsWith('# ')).toBe(true);
    }
    expect(text).not.toMatch(/[\r\u2028]/);
  });

  it('escapes strings in literals, keys and types', () => {
    const r = model('evil-strings', {
      subjectType: 'user',
      condition: `principal["${hostile.replaceAll('\n', '\\n').replaceAll('"', '\\"')}"] == "${hostile.replaceAll('\n', '\\n').replaceAll('"', '\\"')}"`,
    });
    const text = translateRule(r, 0).text;
    const body = text.split('\n').filter((l) => !l.startsWith('#'));
    // The only top-level lines are the clause's own braces.
    expect(body.filter((l) => !l.startsWith('\t'))).toEqual(['allow {', '}']);
    expect(text).toContain(`input.principal[${JSON.stringify(hostile)}] == ${JSON.stringify(hostile)}`);
  });

  it('quotes attribute names that are Rego keywords or not identifiers', () => {
    const r = model('keywords', { condition: 'resource["not"] == principal.meta["default"] && context["a b"] == resource["import"]' });
    expect(translateRule(r, 0).text).toContain('input.resource["not"] == input.principal.meta["default"]');
    expect(translateRule(r, 0).text).toContain('input.context["a b"] == input.resource["import"]');
  });
});

describe('one translation per rule, shared', () => {
  it('gives the controller and every bundle of the rule the same frozen translation', () => {
    const rule = ruleModelFor('shared', { condition: 'principal.team == resource.team' });
    const first = ruleTranslation(rule, 0, false);
    expect(ruleTranslation(rule, 0, false)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(translate([rule], { regoVersion: 0 })).toContain(first.text);
    // Other options are other translations, each shared in its turn.
    expect(ruleTranslation(rule, 1, false)).not.toBe(first);
    expect(ruleTranslation(rule, 1, false)).toBe(ruleTranslation(rule, 1, false));
  });

  it('keeps the prelude of rules that need none empty however many rules that need one are translated', () => {
    const plain = Array.from({ length: 50 }, (_, i) => ruleModelFor(`plain-${i}`, { condition: `principal.level >= ${i}` }));
    const cidrs = Array.from({ length: 50 }, (_, i) =>
      ruleModelFor(`net-${i}`, { condition: `cidr("10.${i}.0.0/16").containsIP(context.ipAddress)` }),
    );
    for (const r of [...plain, ...cidrs]) ruleTranslation(r, 1, false);
    for (const r of plain) expect([...ruleTranslation(r, 1, false).prelude]).toEqual([]);
    for (const r of cidrs) expect(ruleTranslation(r, 1, false).prelude.size).toBeGreaterThan(0);
    expect(translate(plain, { regoVersion: 1 })).toBe(translate([...plain].reverse(), { regoVersion: 1 }));
  });
});
