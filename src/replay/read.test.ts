import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LineRead, readLines, rotationOrder } from './read.ts';
import { MAX_LINE_BYTES } from './types.ts';

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'replay-read-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const noStdin = Readable.from([]);

async function all(paths: string[], stdin: NodeJS.ReadableStream = noStdin, maxLineBytes?: number): Promise<LineRead[]> {
  const out: LineRead[] = [];
  for await (const l of readLines(paths, stdin, maxLineBytes === undefined ? {} : { maxLineBytes })) out.push(l);
  return out;
}
const texts = (lines: LineRead[]): string[] => lines.map((l) => ('text' in l ? l.text : 'tooLong' in l ? '<too long>' : '<broken>'));

describe('readLines', () => {
  it('reads a plain file line by line, numbering lines from 1 and skipping blank ones (CRLF too)', async () => {
    const f = join(dir, 'decisions.log');
    await writeFile(f, 'a\n\nb\r\n  \nc');
    const lines = await all([f]);
    expect(lines).toEqual([
      { where: `${f}:1`, source: f, text: 'a' },
      { where: `${f}:3`, source: f, text: 'b' },
      { where: `${f}:5`, source: f, text: 'c' },
    ]);
  });

  it('gunzips a file found gzip by its magic bytes, whatever its name, several members one after another', async () => {
    const f = join(dir, 'decisions.log.1');
    await writeFile(f, Buffer.concat([gzipSync('a\nb\n'), gzipSync('c\n'), gzipSync('d')]));
    expect(texts(await all([f]))).toEqual(['a', 'b', 'c', 'd']);
  });

  it('reads a gzip stream cut short as far as it goes: the torn last line is given as read', async () => {
    const f = join(dir, 'cut.gz');
    const whole = gzipSync(Array.from({ length: 2000 }, (_, i) => `{"n":${i}}`).join('\n'));
    await writeFile(f, whole.subarray(0, Math.floor(whole.length * 0.6)));
    const got = texts(await all([f]));
    expect(got.length).toBeGreaterThan(100);
    expect(got.slice(0, -1)).toEqual(got.slice(0, -1).map((_, i) => `{"n":${i}}`));
  });

  it('says where a corrupt gzip stream broke, after the lines before it', async () => {
    const f = join(dir, 'corrupt.gz');
    const good = Array.from({ length: 5000 }, (_, i) => `${i} ${randomBytes(24).toString('hex')}`);
    const bad = gzipSync('x'.repeat(10_000));
    bad.fill(0xff, 12, 40);
    await writeFile(f, Buffer.concat([gzipSync(`${good.join('\n')}\n`), bad]));
    const lines = await all([f]);
    expect(lines.length).toBeGreaterThan(1000);
    // Whole lines as written, then the line the break cut (a prefix of it), then where it broke.
    const read = texts(lines).slice(0, -1);
    expect(read.slice(0, -1)).toEqual(good.slice(0, read.length - 1));
    expect(good[read.length - 1]?.startsWith(read.at(-1) ?? '-')).toBe(true);
    expect(lines.at(-1)).toMatchObject({ source: f, broken: expect.stringContaining('gzip stream is corrupt') });
  });

  it('reads stdin for "-", gzip or plain, in chunks of any size', async () => {
    const bytes = gzipSync('one\ntwo\n');
    const chunks = [...bytes].map((b) => Buffer.from([b]));
    expect(await all(['-'], Readable.from(chunks))).toEqual([
      { where: '-:1', source: '-', text: 'one' },
      { where: '-:2', source: '-', text: 'two' },
    ]);
    expect(texts(await all(['-'], Readable.from([Buffer.from('x\ny')])))).toEqual(['x', 'y']);
  });

  it('reads a folder of rotated files oldest first, skipping hidden files and sub-folders', async () => {
    await writeFile(join(dir, 'decisions.log'), 'live\n');
    await writeFile(join(dir, 'decisions.log.1'), 'one\n');
    await writeFile(join(dir, 'decisions.log.2.gz'), gzipSync('two\n'));
    await writeFile(join(dir, 'decisions.log.10.gz'), gzipSync('ten\n'));
    await writeFile(join(dir, '.decisions.log.swp'), 'hidden\n');
    await mkdir(join(dir, 'old'));
    const opened: string[] = [];
    const got: string[] = [];
    for await (const l of readLines([dir], noStdin, { opened: (s) => opened.push(s) })) got.push('text' in l ? l.text : '?');
    expect(got).toEqual(['ten', 'two', 'one', 'live']);
    expect(opened).toEqual(['decisions.log.10.gz', 'decisions.log.2.gz', 'decisions.log.1', 'decisions.log'].map((n) => join(dir, n)));
  });

  it('reports a line over the limit once, without holding it, and goes on with the next', async () => {
    const f = join(dir, 'long.log');
    await writeFile(f, `short\n${'x'.repeat(5000)}\nafter\n${'y'.repeat(4097)}`);
    const lines = await all([f], noStdin, 4096);
    expect(lines).toEqual([
      { where: `${f}:1`, source: f, text: 'short' },
      { where: `${f}:2`, source: f, tooLong: true },
      { where: `${f}:3`, source: f, text: 'after' },
      { where: `${f}:4`, source: f, tooLong: true },
    ]);
  });

  it('streams a line longer than MAX_LINE_BYTES past in chunks, never holding it whole', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    const count = MAX_LINE_BYTES / chunk.length + 4;
    const gen = async function* (): AsyncGenerator<Buffer> {
      yield Buffer.from('first\n');
      for (let i = 0; i < count; i++) yield chunk;
      yield Buffer.from('\nlast\n');
    };
    const before = process.memoryUsage().arrayBuffers;
    let peak = 0;
    const out: LineRead[] = [];
    for await (const l of readLines(['-'], Readable.from(gen()))) {
      out.push(l);
      peak = Math.max(peak, process.memoryUsage().arrayBuffers - before);
    }
    expect(texts(out)).toEqual(['first', '<too long>', 'last']);
    expect(peak).toBeLessThan(MAX_LINE_BYTES);
  });

  it('throws on a path that cannot be read', async () => {
    await expect(all([join(dir, 'missing.log')])).rejects.toThrow(/ENOENT/);
  });
});

describe('rotationOrder', () => {
  it('orders numbered rotations highest first, then the live file', () => {
    expect(rotationOrder(['decisions.log', 'decisions.log.1', 'decisions.log.3.gz', 'decisions.log.2.gz'])).toEqual([
      'decisions.log.3.gz',
      'decisions.log.2.gz',
      'decisions.log.1',
      'decisions.log',
    ]);
  });

  it('orders dated names by date (dateext), then the live file', () => {
    expect(rotationOrder(['decisions.log', 'decisions.log-20261125', 'decisions.log-20261124.gz', 'decisions.log-20261123.gz'])).toEqual([
      'decisions.log-20261123.gz',
      'decisions.log-20261124.gz',
      'decisions.log-20261125',
      'decisions.log',
    ]);
    expect(rotationOrder(['d-2026-11-25.log', 'd-2026-11-24T10.log', 'd-2026-11-24T09.log'])).toEqual([
      'd-2026-11-24T09.log',
      'd-2026-11-24T10.log',
      'd-2026-11-25.log',
    ]);
  });
});
