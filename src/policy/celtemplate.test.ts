import * as cel from '@bufbuild/cel';
import { describe, expect, it, vi } from 'vitest';
import { rng } from '../../test/support/corpus.ts';
import { compileCondition, compileWhole } from './cel.ts';

vi.mock('@bufbuild/cel', async (importOriginal) => {
  const original = await importOriginal<typeof import('@bufbuild/cel')>();
  return { ...original, parse: vi.fn(original.parse) };
});
const parse = vi.mocked(cel.parse);

/** Strings as conditions write them: plain, with the other quote, unicode, a lone surrogate, placeholder-like, and forms the template leaves alone. */
const STRINGS = [
  '"admin"',
  "'it\"s'",
  '"it\'s"',
  '""',
  "''",
  '"é𝒜 café"',
  '"\uD800x"',
  '"#0"',
  '"#12"',
  '"/shared/"',
  '"http://example.com"',
  '"10.0.0.0/8"',
  '"a\\nb"',
  '"tab\\t"',
  'r"raw\\d"',
  'b"bytes"',
  '"""triple"""',
  "'''single triple'''",
  '"x-y"',
];
const BLOCKS = ['"10.0.0.0/8"', "'192.168.0.0/16'", '"2001:db8::/32"', '"300.0.0.0/8"', '"#0"', '"not a block"', 'r"10.0.0.0/8"'];
const PATHS = ['principal.team', 'resource.owner', 'context.ipAddress', 'action', 'principal.tags[0]', 'actionProperties.mode'];
const OPS = ['==', '!=', '<', '<=', '>', '>='];

/** A condition with holes for strings: calling it with a chooser fills them, so one skeleton yields conditions that differ only in strings. */
type Skeleton = (str: () => string) => string;

function skeletons(seed: number): () => Skeleton {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const value = (depth: number): Skeleton => {
    const n = Math.floor(r() * (depth > 2 ? 3 : 8));
    const path = pick(PATHS);
    const num = pick(['3', '-1.5', '0', '9007199254740993', 'null', 'true']);
    switch (n) {
      case 0:
        return () => path;
      case 1:
        return (s) => s();
      case 2:
        return () => num;
      case 3:
        return (s) => `${path}[${s()}]`;
      case 4:
        return (s) => `[${s()}, ${s()}]`;
      case 5:
        return (s) => `size(${s()})`;
      case 6:
        return (s) => `timestamp(${s()}).getHours()`;
      default: {
        const inner = value(depth + 1);
        return (s) => `size(${inner(s)})`;
      }
    }
  };
  const cond = (depth: number): Skeleton => {
    const n = Math.floor(r() * (depth > 3 ? 5 : 11));
    switch (n) {
      case 0:
      case 1: {
        const [a, b, op] = [value(depth), value(depth), pick(OPS)];
        return (s) => `${a(s)} ${op} ${b(s)}`;
      }
      case 2: {
        const [a, b] = [value(depth), value(depth)];
        return (s) => `${a(s)} in ${b(s)}`;
      }
      case 3: {
        const [a, fn] = [value(depth), pick(['startsWith', 'endsWith', 'contains'])];
        return (s) => `${a(s)}.${fn}(${s()})`;
      }
      case 4: {
        const a = value(depth);
        const block = pick(BLOCKS);
        const spacing = pick(['', ' ']);
        return (s) => `cidr(${spacing}${block}).containsIP(${a(s)})`;
      }
      case 5: {
        const c = cond(depth + 1);
        return (s) => `!(${c(s)})`;
      }
      case 6:
      case 7: {
        const [a, b, op] = [cond(depth + 1), cond(depth + 1), pick(['&&', '||'])];
        return (s) => `${a(s)} ${op} ${b(s)}`;
      }
      case 8: {
        const c = cond(depth + 1);
        return (s) => `(${c(s)})`;
      }
      case 9: {
        // Outside the subset or not CEL at all: a string as a condition, a comment, a backtick.
        const odd = pick(['S', '// note\n', '`', 'S ==']);
        const c = cond(depth + 1);
        return (s) => (odd === 'S' ? s() : odd === 'S ==' ? `${s()} ==` : `${odd}${c(s)}`);
      }
      default: {
        const a = value(depth);
        return (s) => a(s);
      }
    }
  };
  return () => cond(0);
}

describe('conditions compiled through a template', () => {
  it('equal the whole compile, result and error, over many generated conditions differing only in strings', () => {
    const next = skeletons(26);
    const r = rng(2626);
    const str = (): string => STRINGS[Math.floor(r() * STRINGS.length)] as string;
    let checked = 0;
    let ok = 0;
    for (let i = 0; i < 600; i++) {
      const skeleton = next();
      // Several conditions of one skeleton in a row: the later ones hit the template of the first.
      for (let j = 0; j < 6; j++) {
        const text = skeleton(str);
        const cached = compileCondition(text);
        expect(JSON.stringify(cached), text).toBe(JSON.stringify(compileWhole(text)));
        expect(compileCondition(text)).toBe(cached);
        checked++;
        if (cached.ok) ok++;
      }
    }
    expect(checked).toBe(3600);
    // Both kinds are well represented, so both paths were compared.
    expect(ok).toBeGreaterThan(600);
    expect(checked - ok).toBeGreaterThan(600);
  });

  it('parses conditions that differ only in their strings once', () => {
    parse.mockClear();
    const results = Array.from({ length: 100 }, (_, i) =>
      compileCondition(`principal.team == resource.team && principal.id != "user-${i}" && resource["k-${i}"] in ['a${i}', "b"]`),
    );
    expect(parse).toHaveBeenCalledTimes(1);
    const last = results[99];
    expect(last?.ok && JSON.stringify(last.cond)).toBe(
      JSON.stringify({
        kind: 'and',
        left: {
          kind: 'and',
          left: {
            kind: 'compare',
            op: '==',
            left: { kind: 'path', root: 'principal', keys: ['team'] },
            right: { kind: 'path', root: 'resource', keys: ['team'] },
          },
          right: {
            kind: 'compare',
            op: '!=',
            left: { kind: 'path', root: 'principal', keys: ['id'] },
            right: { kind: 'literal', value: 'user-99' },
          },
        },
        right: {
          kind: 'in',
          element: { kind: 'path', root: 'resource', keys: ['k-99'] },
          collection: { kind: 'literal', value: ['a99', 'b'] },
        },
      }),
    );
  });

  it('still names the position of an invalid CIDR block in a condition whose template was seen', () => {
    expect(compileCondition('cidr("10.0.0.0/8").containsIP(context.ip) && principal.id != "a"').ok).toBe(true);
    const bad = compileCondition('cidr("10.0.0.0/33").containsIP(context.ip) && principal.id != "b"');
    expect(bad.ok ? undefined : bad.error).toEqual({
      kind: 'unsupported',
      line: 1,
      column: 1,
      message: '"10.0.0.0/33" is not a CIDR block such as "10.0.0.0/8" or "2001:db8::/32" (at line 1, column 1)',
    });
  });
});
