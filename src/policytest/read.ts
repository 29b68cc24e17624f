// The test files of a run, read: a file by readSource on this thread, and a large one in pieces
// (pieces.ts) on as many threads as there are cores, this one included, so 10,000 cases do not wait
// on one core (docs/benchmarks.md#acl-operator-test). The threads live for the read. A file whose
// pieces would be small is read here whole: a thread costs about 50 ms to start and load the yaml
// package, the time it takes to read some 50 KiB of cases.
import { availableParallelism } from 'node:os';
import { createWorkerThread } from '../work/pool.ts';
import { cutCases, joinPieces, type Piece, type PieceRead, readPiece } from './pieces.ts';
import { type FileError, readSource, type SourceFile } from './source.ts';

/** The least a piece holds. */
export const PIECE_BYTES = 128 * 1024;

export interface ReadOptions {
  /** Threads to read on, this one included (default: the cores this process may use). */
  readonly threads?: number;
  /** The least a piece holds (default PIECE_BYTES). */
  readonly pieceBytes?: number;
}

/** The thread's entry, beside this module: `.ts` when running from source, `.js` once built. */
const WORKER = new URL(`./read-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** Each file's value with positions, or its YAML errors, in the order given. */
export async function readSources(
  texts: readonly { readonly file: string; readonly text: string }[],
  options: ReadOptions = {},
): Promise<(SourceFile | FileError[])[]> {
  const threads = options.threads ?? availableParallelism();
  const pieceBytes = options.pieceBytes ?? PIECE_BYTES;
  const cuts = texts.map(({ text }) => cutCases(text, Math.min(threads, Math.floor(text.length / pieceBytes))));
  if (cuts.every((cut) => cut === undefined)) return texts.map(({ file, text }) => readSource(file, text));
  const pool = Array.from({ length: threads - 1 }, (_, i) =>
    createWorkerThread<Piece, PieceRead | undefined, never>(`acl-test-read-${i + 1}`, { script: WORKER }),
  );
  try {
    // Every piece but a file's first goes to a thread before this thread reads its own share.
    let next = 0;
    const sent = cuts.map((cut) =>
      Promise.all(
        (cut?.pieces ?? [])
          .slice(1)
          .map((piece) => (pool[next++ % pool.length] as (typeof pool)[number]).run(piece).catch((): PieceRead | undefined => undefined)),
      ),
    );
    const own = texts.map(({ file, text }, i) => {
      const first = cuts[i]?.pieces[0];
      return first === undefined ? readSource(file, text) : readPiece(first);
    });
    const out: (SourceFile | FileError[])[] = [];
    for (const [i, { file, text }] of texts.entries()) {
      const cut = cuts[i];
      const mine = own[i];
      if (cut === undefined) {
        out.push(mine as SourceFile | FileError[]);
        continue;
      }
      const reads = [mine as PieceRead | undefined, ...((await sent[i]) ?? [])];
      // A piece that did not read cleanly, or a rest that does not join: the whole file, for its errors.
      out.push(joinPieces(file, text, cut, reads) ?? readSource(file, text));
    }
    return out;
  } finally {
    await Promise.all(pool.map((thread) => thread.close()));
  }
}
