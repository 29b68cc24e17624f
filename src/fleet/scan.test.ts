import { describe, expect, it } from 'vitest';
import { createJsonScanner, MAX_UPLOAD_DEPTH } from './scan.ts';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
/** The scan of `text` given whole, and given in pieces of every size from 1 to 7 bytes: they must agree. */
function scanEveryWay(text: string, maxDepth: number, maxContainers: number): (string | undefined)[] {
  const whole = createJsonScanner(maxDepth, maxContainers).push(bytes(text))?.code;
  const answers: (string | undefined)[] = [whole];
  for (let size = 1; size <= 7; size++) {
    const scanner = createJsonScanner(maxDepth, maxContainers);
    const all = bytes(text);
    let code: string | undefined;
    for (let i = 0; i < all.length && code === undefined; i += size) code = scanner.push(all.subarray(i, i + size))?.code;
    answers.push(code);
  }
  return answers;
}

describe('the scan of an upload before it is parsed', () => {
  it('lets JSON nested as deep as the limit through, and refuses one level more', () => {
    const nested = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
    expect(createJsonScanner(MAX_UPLOAD_DEPTH, 1e6).push(bytes(nested(MAX_UPLOAD_DEPTH)))).toBeUndefined();
    expect(createJsonScanner(MAX_UPLOAD_DEPTH, 1e6).push(bytes(nested(MAX_UPLOAD_DEPTH + 1)))).toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/nested deeper than 10002 levels/),
    });
  });

  it('counts arrays and objects side by side, not only nested, and refuses one more than the limit with 413', () => {
    expect(createJsonScanner(10, 4).push(bytes('[{},[],{"a":[]}]'))).toMatchObject({ code: 'too_large' });
    expect(createJsonScanner(10, 5).push(bytes('[{},[],{"a":[]}]'))).toBeUndefined();
  });

  it('ignores brackets inside strings, escaped quotes and escaped backslashes included, however the text is cut', () => {
    const text = '{"a":"[[[{{{","b":"\\"[[[","c":"\\\\","d":[[["\\\\\\"]]]"]]],"e":"é[ü"}';
    expect(JSON.parse(text)).toBeTruthy();
    expect(scanEveryWay(text, 4, 4)).toEqual(Array(8).fill(undefined));
    expect(scanEveryWay(text, 3, 5)).toEqual(Array(8).fill('bad_request'));
    expect(scanEveryWay(text, 4, 3)).toEqual(Array(8).fill('too_large'));
  });

  it('carries a run of backslashes across pieces: an escaped quote never ends a string', () => {
    // "x\\\\" then ",[[" : the string ends after four backslashes, so the brackets count.
    const closed = '["x\\\\\\\\",[[1]]]';
    const open = '["x\\\\\\"[[[[",1]';
    expect(JSON.parse(closed)).toBeTruthy();
    expect(JSON.parse(open)).toBeTruthy();
    expect(scanEveryWay(closed, 2, 10)).toEqual(Array(8).fill('bad_request'));
    expect(scanEveryWay(open, 1, 10)).toEqual(Array(8).fill(undefined));
  });
});
