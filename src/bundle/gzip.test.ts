import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createPieceCache, cuts, gzipPieces } from './gzip.ts';

function text(rules: number, edit = -1): Uint8Array {
  const clauses = Array.from(
    { length: rules },
    (_, i) => `# Rule r${i}\nallow if {\n\tinput.principal.type == "user"\n\tinput.action == "read-${i === edit ? 'edited' : i}"\n}`,
  );
  return new TextEncoder().encode(`package acl\n\n${clauses.join('\n\n')}\n`);
}

describe('gzipPieces', () => {
  it('is a gzip stream any reader inflates to the same bytes, for every size', () => {
    for (const data of [new Uint8Array(0), new TextEncoder().encode('x'), text(3), text(5000)]) {
      expect(Buffer.from(gunzipSync(gzipPieces(data))).equals(Buffer.from(data))).toBe(true);
    }
  });

  it('gives the same bytes from a warm cache as from a cold one', () => {
    const cache = createPieceCache();
    gzipPieces(text(5000), cache);
    gzipPieces(text(5000, 1234), cache);
    const warm = gzipPieces(text(5000, 77), cache);
    expect(Buffer.from(warm).equals(Buffer.from(gzipPieces(text(5000, 77))))).toBe(true);
  });

  it('compresses again only the piece an edit touched', () => {
    const cache = createPieceCache();
    gzipPieces(text(20000), cache);
    const before = cache.pieces.size;
    expect(before).toBeGreaterThan(10);
    gzipPieces(text(20000, 10000), cache);
    expect(cache.pieces.size - before).toBeLessThanOrEqual(2);
    // The pieces after an edit are those before it, apart from the one holding the edit.
    const pieces = (d: Uint8Array): string[] => {
      let start = 0;
      return cuts(d).map((end) => {
        const p = Buffer.from(d.subarray(start, end)).toString();
        start = end;
        return p;
      });
    };
    const before2 = new Set(pieces(text(20000)));
    expect(pieces(text(20000, 10000)).filter((p) => !before2.has(p))).toHaveLength(1);
  });
});
