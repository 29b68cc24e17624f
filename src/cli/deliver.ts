// Where an offline command's report goes: --out (one line on stderr says where, and what it holds)
// or stdout. `test` and `replay` share it.
import { writeFile } from 'node:fs/promises';

/** Writes `text` to `out` (then `Wrote <out>: <summary>` on stderr) or to stdout; 2 when --out cannot be written, else 0. */
export async function deliverReport(text: string, out: string | undefined, summary: () => string): Promise<number> {
  if (out === undefined) {
    process.stdout.write(text);
    return 0;
  }
  try {
    await writeFile(out, text);
  } catch (err) {
    process.stderr.write(`--out ${out}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  process.stderr.write(`Wrote ${out}: ${summary()}\n`);
  return 0;
}
