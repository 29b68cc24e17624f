import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { parseManifests, type Manifest, type ManifestError } from '../api/index.ts';

/** Every YAML document under a folder (recursively, files in name order), parsed and validated. */
export async function readManifestFolder(dir: string): Promise<{ manifests: Manifest[]; errors: ManifestError[]; files: string[] }> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((e) => e.isFile() && /\.ya?ml$/i.test(e.name))
    .map((e) => join(e.parentPath, e.name))
    .sort();
  const manifests: Manifest[] = [];
  const errors: ManifestError[] = [];
  for (const file of files) {
    const parsed = parseManifests(await readFile(file, 'utf8'), relative(dir, file) || file);
    manifests.push(...parsed.manifests);
    errors.push(...parsed.errors);
  }
  return { manifests, errors, files };
}
