// Reads a bundle's files back out of its tar.gz (ustar, regular files only): enough for tests to
// look at .manifest and policy.rego as OPA would, without trusting the code that packed them.
import { gunzipSync } from 'node:zlib';

/** Every file of a tar.gz, in archive order. */
export function tarEntries(bytes: Uint8Array): { name: string; text: string }[] {
  const tar = gunzipSync(bytes);
  const out: { name: string; text: string }[] = [];
  for (let off = 0; off + 512 <= tar.length; ) {
    const name = tar
      .subarray(off, off + 100)
      .toString('utf8')
      .replace(/\0.*$/s, '');
    if (name === '') break;
    const size = parseInt(
      tar
        .subarray(off + 124, off + 136)
        .toString('utf8')
        .replace(/\0.*$/s, '')
        .trim(),
      8,
    );
    out.push({ name, text: tar.subarray(off + 512, off + 512 + size).toString('utf8') });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

/** The names of a tar.gz's files, in archive order. */
export function tarNames(bytes: Uint8Array): string[] {
  return tarEntries(bytes).map((e) => e.name);
}

/** The text of one file of a tar.gz, or undefined when the archive has no such file. */
export function tarFile(bytes: Uint8Array, file: string): string | undefined {
  return tarEntries(bytes).find((e) => e.name === file)?.text;
}
