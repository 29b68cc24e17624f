import { describe, expect, it } from 'vitest';
import { parseExactJson } from './index.ts';

describe('parseExactJson', () => {
  it('accepts numbers written as their double is', () => {
    const r = parseExactJson('{"a": 0.1, "b": 3, "c": 3.0, "d": -0, "e": 1e21, "f": 1E-7, "g": 9007199254740992, "h": 1234567890.12345}');
    expect(r).toEqual({ ok: true, value: { a: 0.1, b: 3, c: 3, d: -0, e: 1e21, f: 1e-7, g: 9007199254740992, h: 1234567890.12345 } });
  });

  it.each([
    ['0.30000000000000001', '{"x": 0.30000000000000001}'],
    ['9007199254740993', '[9007199254740993]'],
    ['1e400', '{"x": 1e400}'],
    ['12345678901234567890', '{"deep": {"list": [1, 12345678901234567890]}}'],
  ])('refuses %s, naming it', (number, text) => {
    const r = parseExactJson(text);
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.message).toContain(`the number ${number} cannot be compared exactly`);
  });

  it('keeps strings that only look like long numbers', () => {
    const r = parseExactJson('{"id": "12345678901234567890", "v": "3e5"}');
    expect(r).toEqual({ ok: true, value: { id: '12345678901234567890', v: '3e5' } });
  });

  it('accepts a long number that is exactly its double', () => {
    expect(parseExactJson('[0.5000000000000000000, 1.00000000000000000000e3, 9007199254740992.000]')).toEqual({
      ok: true,
      value: [0.5, 1000, 9007199254740992],
    });
    // 12345678901234567e2 is 1234567890123456700, whose nearest double is 1234567890123456800.
    expect(parseExactJson('[12345678901234567e2]').ok).toBe(false);
  });

  it('reports syntax errors', () => {
    const r = parseExactJson('{"a": }');
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.message).toMatch(/^invalid JSON: /);
  });
});
