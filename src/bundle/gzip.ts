// The bundle's gzip, in independent members: the tar is cut at content-defined places (after a
// blank line, once a piece is long enough, where a hash of the text says so) and each piece is its
// own gzip member (RFC 1952 2.2: a gzip file is a series of members; Go's compress/gzip, which OPA
// reads bundles with, and every gunzip read them as one stream). A member depends only on its piece,
// so it is kept: after one rule changes, one or two pieces are compressed again instead of the whole
// bundle, and the bytes are exactly those a cold build gives (the cache only remembers results).
import { createHash } from 'node:crypto';
import { gzipSync } from 'fflate';

/** A piece is closed at a blank line once it holds this much... */
const MIN_PIECE = 64 * 1024;
/** ...where the hash of the line before says so (about one blank line in 8)... */
const CUT_ONE_IN = 8;
/** ...and at the first blank line past this size, whatever the hash. */
const MAX_PIECE = 256 * 1024;

function member(bytes: Uint8Array): Uint8Array {
  return gzipSync(bytes, { level: 9, mtime: 0 });
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** FNV-1a of bytes [from, to): a cheap, deterministic choice of where to cut. */
function fnv(bytes: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  return h >>> 0;
}

/**
 * Where the pieces end: before a line that follows a blank line (in policy.rego, the comment that
 * opens each rule), chosen by that line's text, so an edit moves only the cuts near it.
 */
export function cuts(bytes: Uint8Array): number[] {
  const ends: number[] = [];
  let start = 0;
  for (let i = 0; i + 1 < bytes.length; i++) {
    if (bytes[i] !== 10 || bytes[i + 1] !== 10) continue;
    const next = i + 2;
    const size = next - start;
    if (size < MIN_PIECE) continue;
    let lineEnd = bytes.indexOf(10, next);
    if (lineEnd < 0) lineEnd = bytes.length;
    if (size >= MAX_PIECE || fnv(bytes, next, lineEnd) % CUT_ONE_IN === 0) {
      ends.push(next);
      start = next;
    }
  }
  ends.push(bytes.length);
  return ends;
}

/** Compressed pieces by the sha1 of their bytes, with the pack they were last used in. */
export interface PieceCache {
  readonly pieces: Map<string, { bytes: Uint8Array; usedIn: number }>;
  packs: number;
}

export function createPieceCache(): PieceCache {
  return { pieces: new Map(), packs: 0 };
}

/** Pieces not used in this many packs are forgotten. */
const KEEP_PACKS = 16;

/**
 * gzip of `data` (level 9, mtime 0), one member per piece, each compressed once. `cutAt`: a place
 * where a piece must end (where what follows differs between archives that share what precedes).
 */
export function gzipPieces(data: Uint8Array, cache: PieceCache = createPieceCache(), cutAt?: number): Uint8Array {
  const pack = ++cache.packs;
  const parts: Uint8Array[] = [];
  let start = 0;
  const ends =
    cutAt === undefined || cutAt <= 0 || cutAt >= data.length
      ? cuts(data)
      : [...cuts(data.subarray(0, cutAt)), ...cuts(data.subarray(cutAt)).map((end) => end + cutAt)];
  for (const end of ends) {
    const piece = data.subarray(start, end);
    start = end;
    const key = createHash('sha1').update(piece).digest('base64');
    let known = cache.pieces.get(key);
    if (!known) {
      known = { bytes: member(piece), usedIn: pack };
      cache.pieces.set(key, known);
    }
    known.usedIn = pack;
    parts.push(known.bytes);
  }
  for (const [key, p] of cache.pieces) if (pack - p.usedIn >= KEEP_PACKS) cache.pieces.delete(key);
  return concat(parts);
}
