import { describe, expect, it } from 'vitest';
import { buildDirectory, sortSteps } from './directory.ts';
import { codePointCompare } from './values.ts';

describe('sortSteps', () => {
  it('puts strings in code point order, as a whole sort does, at every size', () => {
    let seed = 3;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = ['a', 'b', 'Z', '0', '\uFFFD', '\uE000', '\uD83D\uDE00', 'é', '-'];
    for (const n of [0, 1, 5, 2047, 2048, 2049, 9000]) {
      const items = Array.from({ length: n }, () => Array.from({ length: 1 + rand(6) }, () => alphabet[rand(alphabet.length)]).join(''));
      const expected = [...items].sort(codePointCompare);
      const steps = sortSteps([...items]);
      let yields = 0;
      let got: string[] | undefined;
      for (;;) {
        const step = steps.next();
        if (step.done) {
          got = step.value;
          break;
        }
        yields++;
      }
      expect(got).toEqual(expected);
      if (n > 4096) expect(yields).toBeGreaterThan(2);
    }
  });

  it('gives a directory its ids in code point order (U+FFFD before a surrogate pair)', () => {
    const d = buildDirectory([
      { type: 'u', id: '\uD83D\uDE00', properties: {} },
      { type: 'u', id: '\uFFFD', properties: {} },
      { type: 'u', id: 'a', properties: {} },
    ]);
    expect(d.ids('u')).toEqual(['a', '\uFFFD', '\uD83D\uDE00']);
  });
});
