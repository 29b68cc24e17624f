// The lines of decision logs as a stream, whatever way they were kept: a file, a folder of files
// rotated by logrotate (read oldest first), gzip (found by its magic bytes, several members one after
// the other as logrotate's compress or `cat a.gz b.gz` makes them, a stream cut short read as far as
// it goes) or stdin (`-`). Memory stays flat in the size of the log: a chunk at a time, one line at
// most MAX_LINE_BYTES; a longer line is skipped as it streams past and reported, never held whole.
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { constants, createGunzip } from 'node:zlib';
import { MAX_LINE_BYTES } from './types.ts';

/** One line read: its text, a line over the limit, or where a gzip stream broke (the rest of that file is unreadable). */
export type LineRead =
  | { readonly where: string; readonly source: string; readonly text: string }
  | { readonly where: string; readonly source: string; readonly tooLong: true }
  | { readonly where: string; readonly source: string; readonly broken: string };

export interface ReadOptions {
  /** Told each source (a file, or `-`) as it is opened, in reading order: the report's `sources`. */
  readonly opened?: (source: string) => void;
  /** Longest line parsed (default MAX_LINE_BYTES; tests lower it). */
  readonly maxLineBytes?: number;
}

const NEWLINE = 0x0a;
const GZIP_SLICE = 16 * 1024;

/** How a rotated file's name orders it: its log's name, then numbered rotations (highest first), dated ones (earliest first), the live file. */
interface Place {
  readonly base: string;
  readonly kind: 0 | 1 | 2;
  readonly rank: number;
  readonly date: string;
}

function placeOf(name: string): Place {
  const s = name.endsWith('.gz') ? name.slice(0, -3) : name;
  const numbered = /^(.+)\.(\d{1,6})$/.exec(s);
  if (numbered) return { base: numbered[1] ?? s, kind: 0, rank: -Number(numbered[2]), date: '' };
  // logrotate's dateext (-20261124, -2026-11-24, with an hour or more), wherever the date sits in the name.
  const dated = /[-_.]?(\d{4})-?(\d{2})-?(\d{2})(?:[T_-]?(\d{2}))?(?:[:-]?(\d{2}))?(?:[:-]?(\d{2}))?/.exec(s);
  if (dated) {
    const date = dated
      .slice(1)
      .map((d) => d ?? '00')
      .join('');
    return { base: s.slice(0, dated.index) + s.slice(dated.index + dated[0].length), kind: 1, rank: 0, date };
  }
  return { base: s, kind: 2, rank: 0, date: '' };
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The order a folder's files are read in: oldest first, as logrotate names them. */
export function rotationOrder(names: readonly string[]): string[] {
  const placed = names.map((name) => ({ name, place: placeOf(name) }));
  placed.sort(
    (a, b) =>
      byText(a.place.base, b.place.base) ||
      a.place.kind - b.place.kind ||
      a.place.rank - b.place.rank ||
      byText(a.place.date, b.place.date) ||
      byText(a.name, b.name),
  );
  return placed.map((p) => p.name);
}

/** The files of a folder to read (not hidden ones, not sub-folders), oldest first. */
async function folderFiles(dir: string): Promise<string[]> {
  const names: string[] = [];
  for (const name of await readdir(dir)) {
    if (name.startsWith('.')) continue;
    if ((await stat(join(dir, name))).isFile()) names.push(name);
  }
  return rotationOrder(names).map((n) => join(dir, n));
}

/** Each path given as the sources it stands for: a folder's files in order, a file, or `-`. */
export async function sourcesOf(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    if (p === '-') out.push(p);
    else if ((await stat(p)).isDirectory()) out.push(...(await folderFiles(p)));
    else out.push(p);
  }
  return out;
}

/** The bytes of a stream, gunzipped when they start with gzip's magic bytes (1f 8b). */
async function* decoded(raw: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const it = raw[Symbol.asyncIterator]();
  let head: Buffer = Buffer.alloc(0);
  while (head.length < 2) {
    const next = await it.next();
    if (next.done) break;
    head = head.length === 0 ? next.value : Buffer.concat([head, next.value]);
  }
  const rest = async function* (slice = Number.POSITIVE_INFINITY): AsyncGenerator<Buffer> {
    for (let next: IteratorResult<Buffer> = { done: false, value: head }; !next.done; next = await it.next()) {
      for (let at = 0; at < next.value.length; at += slice) yield next.value.subarray(at, at + slice);
    }
  };
  if (head.length < 2 || head[0] !== 0x1f || head[1] !== 0x8b) {
    yield* rest();
    return;
  }
  // A sync flush at the end: a stream cut short gives what it holds instead of an error. Written in
  // slices: what zlib made of the slices before a corrupt one reaches us before its error does.
  const gunzip = createGunzip({ finishFlush: constants.Z_SYNC_FLUSH });
  pipeline(Readable.from(rest(GZIP_SLICE)), gunzip, () => {});
  for await (const chunk of gunzip) yield chunk as Buffer;
}

/** A line's text, or undefined for a blank one (not counted). */
function textOf(bytes: Buffer): string | undefined {
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === 0x0d) end--;
  const text = bytes.toString('utf8', 0, end);
  if (text.length === 0 || (text.charCodeAt(0) <= 32 && text.trim() === '')) return undefined;
  return text;
}

/**
 * The lines of one source, numbered from 1, in batches (one per chunk read: a yield per line would
 * cost more than finding the line); a broken gzip stream ends it with a `broken` line.
 */
async function* batchesOfSource(source: string, raw: AsyncIterable<Buffer>, max: number): AsyncGenerator<LineRead[]> {
  let parts: Buffer[] = [];
  let held = 0;
  let over = false;
  let n = 0;
  let batch: LineRead[] = [];
  const line = (last: Buffer): void => {
    n++;
    if (over || held + last.length > max) batch.push({ where: `${source}:${n}`, source, tooLong: true });
    else {
      const text = textOf(held === 0 ? last : Buffer.concat([...parts, last]));
      if (text !== undefined) batch.push({ where: `${source}:${n}`, source, text });
    }
    parts = [];
    held = 0;
    over = false;
  };
  try {
    for await (const chunk of decoded(raw)) {
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE, start); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        line(chunk.subarray(start, nl));
        start = nl + 1;
      }
      if (batch.length > 0) {
        yield batch;
        batch = [];
      }
      const tail = chunk.subarray(start);
      if (over || tail.length === 0) continue;
      if (held + tail.length > max) {
        // Past the limit: what was held is let go, the rest of the line streams past unread.
        over = true;
        parts = [];
        held = 0;
      } else {
        parts.push(tail);
        held += tail.length;
      }
    }
  } catch (err) {
    if (!(err instanceof Error && 'code' in err && String(err.code).startsWith('Z_'))) throw err;
    if (held > 0 || over) line(Buffer.alloc(0));
    batch.push({
      where: `${source}:${n + 1}`,
      source,
      broken: `the gzip stream is corrupt (${err.message}): the rest of ${source}, and what the last ${GZIP_SLICE / 1024} KiB of it read before the damage held, was not read`,
    });
    yield batch;
    return;
  }
  if (held > 0 || over) line(Buffer.alloc(0));
  if (batch.length > 0) yield batch;
}

/**
 * The lines of decision logs in batches, in order: each path a file, a folder (its files oldest
 * first, as logrotate names them) or `-` (stdin). A path that cannot be read throws (the command's exit 2).
 */
export async function* readBatches(
  paths: readonly string[],
  stdin: NodeJS.ReadableStream,
  options: ReadOptions = {},
): AsyncGenerator<readonly LineRead[]> {
  const max = options.maxLineBytes ?? MAX_LINE_BYTES;
  for (const source of await sourcesOf(paths)) {
    options.opened?.(source);
    const raw = source === '-' ? (stdin as AsyncIterable<Buffer>) : createReadStream(source, { highWaterMark: 256 * 1024 });
    yield* batchesOfSource(source, raw, max);
  }
}

/** The lines of decision logs one by one, as readBatches reads them. */
export async function* readLines(
  paths: readonly string[],
  stdin: NodeJS.ReadableStream,
  options: ReadOptions = {},
): AsyncGenerator<LineRead> {
  for await (const batch of readBatches(paths, stdin, options)) yield* batch;
}
