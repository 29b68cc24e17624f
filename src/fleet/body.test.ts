import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readSmallUploadJson, readUploadJson, SMALL_BYTES } from './body.ts';

const LIMIT = 4 * 1024 * 1024;
const body = (text: string, gzip = false) => ({ body: gzip ? gzipSync(text) : Buffer.from(text), gzip, limitBytes: LIMIT });
const list = (n: number, item: (i: number) => string): string => `[${Array.from({ length: n }, (_, i) => item(i)).join(',')}]`;

describe('what the event loop reads itself, and what it leaves to the uploads thread', () => {
  it('reads a small, plain upload at once, as the thread would', async () => {
    const text = list(100, (i) => `{"labels":{"id":"opa-${i}"},"result":true}`);
    for (const gzip of [false, true]) {
      const here = readSmallUploadJson(body(text, gzip), true);
      expect(here).toEqual(await readUploadJson(body(text, gzip), true));
      expect(here).toMatchObject({ ok: true, keptNumbers: false });
    }
  });

  it('leaves to the thread what is large, or costly to parse however small, or needs numbers kept exactly', () => {
    const leftToThread: [string, string, boolean][] = [
      ['more than 128 KiB', `["${'x'.repeat(SMALL_BYTES)}"]`, false],
      ['a gzip whose trailer says more than 128 KiB', `["${'x'.repeat(SMALL_BYTES)}"]`, true],
      ['2,049 objects', list(2049, () => '{}'), false],
      ['4,097 keys', `{${Array.from({ length: 4097 }, (_, i) => `"k${i}":0`).join(',')}}`, false],
      ['a number a double would change', '[{"n":9007199254740993}]', false],
    ];
    for (const [what, text, gzip] of leftToThread) expect([what, readSmallUploadJson(body(text, gzip), true)]).toEqual([what, undefined]);
    // Status reports keep no number exactly: the same upload is read at once.
    expect(readSmallUploadJson(body('[{"n":9007199254740993}]'), false)).toMatchObject({ ok: true });
  });

  it('refuses at once, without parsing, what is nested deeper than OPA sends or is not gzip', () => {
    expect(readSmallUploadJson(body(`${'['.repeat(20_000)}${']'.repeat(20_000)}`, true), true)).toMatchObject({
      ok: false,
      code: 'bad_request',
      message: expect.stringMatching(/nested deeper than 10002 levels/),
    });
    expect(readSmallUploadJson({ ...body('{}'), gzip: true }, true)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/not valid gzip/),
    });
  });
});
