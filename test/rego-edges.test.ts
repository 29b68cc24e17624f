// Edges where the printed Rego meets OPA's scanner and builtins: a byte-order mark, a decision input
// without context, and the two patterns that keep net.cidr_contains and time.parse_rfc3339_ns from
// ever raising an error (which OPA's --strict-builtin-errors would turn into a failed query).
import { describe, expect, it } from 'vitest';
import { buildIndex, compileRule, decide, toDecisionInput, translate, translateRule } from '../src/policy/index.ts';
import { IP_PATTERN } from '../src/policy/ip.ts';
import { TIMESTAMP_PATTERN } from '../src/policy/timestamps.ts';
import { rng } from './support/corpus.ts';
import { loadPolicy } from './support/rego-model.ts';
import { ruleModelFor } from './support/rules.ts';

describe('byte-order marks', () => {
  const rule = ruleModelFor('bom', { condition: 'principal.name == "\\uFEFFx"', description: 'note\uFEFF here' });

  it('never appear raw in the Rego, which OPA would refuse to parse', () => {
    const text = translate([rule], { regoVersion: 0 });
    expect(text).not.toContain('\uFEFF');
    expect(text).toContain('input.principal.name == "\\ufeffx"');
    expect(() => loadPolicy(`package acl\n# a\uFEFFb\ndefault allow = false\nallow {\n\tfalse\n}\n`)).toThrow(/byte-order mark/);
  });

  it('still match the same strings in OPA and in the evaluator', () => {
    const p = loadPolicy(translate([rule], { regoVersion: 1 }), { strictBuiltinErrors: true });
    const input = toDecisionInput({ principal: { type: 'user', name: '\uFEFFx' }, action: 'read', resource: { type: 'document' } });
    if (typeof input === 'string') throw new Error(input);
    expect(p.allow(input)).toBe(true);
    expect(decide(buildIndex('acme', [compileRule(rule)]), input).allow).toBe(true);
  });
});

describe('a decision input without context', () => {
  const rules = [
    ruleModelFor('empty-context', { condition: 'size(context) == 0' }),
    ruleModelFor('no-vip', { condition: '!("vip" in context)' }),
    ruleModelFor('context-not-null', { condition: 'context != null' }),
  ];

  it('reads as an empty context in the evaluator and in OPA (which sees no context at all)', () => {
    const raw = { principal: { type: 'user', id: 'a' }, action: 'read', resource: { type: 'document', id: 'd' } };
    const input = toDecisionInput(raw);
    if (typeof input === 'string') throw new Error(input);
    for (const rule of rules) {
      for (const v of [0, 1] as const) {
        const p = loadPolicy(translate([rule], { regoVersion: v }), { strictBuiltinErrors: true });
        expect([rule.name, v, p.allow(raw)]).toEqual([rule.name, v, decide(buildIndex('acme', [compileRule(rule)]), input).allow]);
      }
      expect(decide(buildIndex('acme', [compileRule(rule)]), input).allow).toBe(true);
    }
    expect(translateRule(rules[0]!, 0).text).toContain('acl_size(object.get(input, "context", {})) == 0');
  });

  it('is rejected when context is null rather than absent', () => {
    expect(toDecisionInput({ principal: {}, action: 'read', resource: {}, context: null })).toBe('context must be an object');
  });
});

/** Go's net.ParseIP, through the OPA model: undefined means the builtin raised an error. */
const model = loadPolicy('package acl\ndefault allow = false\nallow {\n\tfalse\n}\n');
function goParsesIp(s: string): boolean {
  return model.call('net.cidr_contains', ['0.0.0.0/0', s]) !== undefined;
}

describe('the IP pattern', () => {
  const ip = new RegExp(IP_PATTERN);

  it('accepts exactly the strings Go parses as IP addresses (checked on valid, mangled and random strings)', () => {
    const r = rng(7);
    const seeds = [
      '10.1.2.3',
      '0.0.0.0',
      '255.255.255.255',
      '::',
      '::1',
      '1::',
      '2001:db8::1',
      '1:2:3:4:5:6:7:8',
      '::ffff:10.1.2.3',
      '1:2:3:4:5:6:1.2.3.4',
      'fe80::1:2',
      'ABCD:ef01::9',
    ];
    const alphabet = '0123456789abcdefABCDEF:.%/ g';
    const candidates = new Set<string>(seeds);
    for (let i = 0; i < 20_000; i++) {
      const seed = seeds[Math.floor(r() * seeds.length)] as string;
      const at = Math.floor(r() * (seed.length + 1));
      const ch = alphabet[Math.floor(r() * alphabet.length)] as string;
      const op = r();
      candidates.add(
        op < 0.4
          ? seed.slice(0, at) + ch + seed.slice(at)
          : op < 0.7
            ? seed.slice(0, at) + seed.slice(at + 1)
            : op < 0.85
              ? seed.slice(0, at) + ch + seed.slice(at + 1)
              : Array.from({ length: 1 + Math.floor(r() * 12) }, () => alphabet[Math.floor(r() * 11)]).join(''),
      );
    }
    const disagreements = [...candidates].filter((s) => !s.includes('/') && ip.test(s) !== goParsesIp(s));
    expect(disagreements.slice(0, 10)).toEqual([]);
    const valid = [...candidates].filter((s) => ip.test(s)).length;
    expect(valid).toBeGreaterThan(1000);
    expect(candidates.size - valid).toBeGreaterThan(1000);
  });
});

describe('the timestamp pattern', () => {
  const ts = new RegExp(TIMESTAMP_PATTERN);

  it("accepts exactly the real calendar days of 1678 to 2261, which all fit OPA's int64 nanoseconds", () => {
    const wrong: string[] = [];
    for (let year = 1600; year <= 2300; year++) {
      for (let month = 1; month <= 12; month++) {
        for (let day = 27; day <= 32; day++) {
          const text = `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}T12:00:00Z`;
          const date = new Date(Date.UTC(2000, month - 1, day));
          date.setUTCFullYear(year, month - 1, day);
          const real = date.getUTCDate() === day && date.getUTCMonth() === month - 1;
          const want = real && year >= 1678 && year <= 2261;
          if (ts.test(text) !== want) wrong.push(text);
          // What the pattern lets through, OPA parses without an error (here: the model of Go's parser).
          if (ts.test(text) && model.call('time.parse_rfc3339_ns', [text]) === undefined) wrong.push(`${text} (OPA error)`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('keeps the extreme offsets inside the range', () => {
    for (const text of ['1678-01-01T00:00:00+23:59', '2261-12-31T23:59:59.999999999-23:59']) {
      expect(ts.test(text)).toBe(true);
      expect(model.call('time.parse_rfc3339_ns', [text])).not.toBeUndefined();
    }
  });
});
