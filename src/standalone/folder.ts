import { readFile } from 'node:fs/promises';
import { relative } from 'node:path';
import { parseManifests, type Manifest, type ManifestError } from '../api/index.ts';
import { walkManifests } from './walk.ts';

/**
 * Every YAML document under a folder, parsed and validated: the files `serve` reads (recursively, in
 * name order, links inside the folder followed, dot-folders skipped: walk.ts), so `render` shows what `serve` would build.
 */
export async function readManifestFolder(dir: string): Promise<{ manifests: Manifest[]; errors: ManifestError[]; files: string[] }> {
  const { files } = await walkManifests(dir);
  const manifests: Manifest[] = [];
  const errors: ManifestError[] = [];
  for (const file of files) {
    const parsed = parseManifests(await readFile(file, 'utf8'), relative(dir, file) || file);
    manifests.push(...parsed.manifests);
    errors.push(...parsed.errors);
  }
  return { manifests, errors, files };
}
