// Reads a bundle's files back out of its tar.gz (ustar, regular files only): enough for tests to
// look at .manifest and policy.rego as OPA would, without trusting the code that packed them.
import { gunzipSync } from 'node:zlib';

/** The text of one file of a tar.gz, or undefined when the archive has no such file. */
export function tarFile(bytes: Uint8Array, file: string): string | undefined {
  const tar = gunzipSync(bytes);
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
    if (name === file) return tar.subarray(off + 512, off + 512 + size).toString('utf8');
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return undefined;
}
