// The YAML files under the manifests folder, in name order. Links are followed only when they stay
// inside the folder and lead somewhere not read yet: a link out of the folder, a loop (a link to a
// folder that contains it) or a second way into a folder already read is reported, never followed.
// Names starting with a dot are skipped (Kubernetes' `..data` copies of a mounted ConfigMap, editor
// and VCS folders); a mounted ConfigMap's `file.yaml -> ..data/file.yaml` links are read. Test files
// (`*.test.yaml`, `*.test.yml`: cases for `acl-operator test`) sit beside the manifests but are never
// read as manifests: they are listed apart. It also names the folders whose entries decide what is read,
// for the watcher (watch.ts).
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { DocumentProblem } from './objects.ts';

const YAML = /\.ya?ml$/i;
const TEST = /\.test\.ya?ml$/i;

export interface ManifestFiles {
  /** Manifests: absolute paths (as reached through the folder, not resolved), in name order. */
  readonly files: string[];
  /** Test files (`*.test.yaml`, `*.test.yml`), found the same way; never manifests. */
  readonly tests: string[];
  /** Links not followed and folders that could not be read, one problem each. */
  readonly problems: DocumentProblem[];
  /**
   * Every folder whose entries decide what is read, once each: the folders read (as reached through
   * the folder) and the real folders of the files that links lead to (a ConfigMap's `..2026_…`), so
   * a change in any of them is seen however the file was replaced.
   */
  readonly folders: string[];
}

function inside(root: string, real: string): boolean {
  return real === root || real.startsWith(root + sep);
}

function compareNames(a: Dirent, b: Dirent): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

export async function walkManifests(dir: string): Promise<ManifestFiles> {
  const root = await realpath(dir);
  const files: string[] = [];
  const tests: string[] = [];
  /** A YAML file reached at `path` under the name `name`: a test file or a manifest. */
  const found = (path: string, name: string): void => {
    if (TEST.test(name)) tests.push(path);
    else if (YAML.test(name)) files.push(path);
  };
  const problems: DocumentProblem[] = [];
  const problem = (path: string, message: string): void => {
    problems.push({ source: relative(dir, path) || path, document: 0, name: undefined, message });
  };
  /** Real paths of the folders read so far. */
  const visited = new Set<string>([root]);
  const folders = new Set<string>([dir]);

  async function walk(folder: string, realFolder: string): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch (err) {
      problem(folder, `cannot read the folder: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    for (const entry of entries.sort(compareNames)) {
      if (entry.name.startsWith('.')) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        const real = join(realFolder, entry.name);
        // Already read through a link that came earlier in name order.
        if (visited.has(real)) continue;
        visited.add(real);
        folders.add(path);
        await walk(path, real);
        continue;
      }
      if (entry.isFile()) {
        found(path, entry.name);
        continue;
      }
      if (!entry.isSymbolicLink()) continue;
      const real = await realpath(path).catch(() => undefined);
      if (real === undefined) {
        // A dangling link is a file being replaced, or a mistake: only YAML names are worth a word.
        if (YAML.test(entry.name)) problem(path, 'a link whose target does not exist: not read');
        continue;
      }
      if (!inside(root, real)) {
        problem(path, `a link out of the manifests folder (to ${real}): not followed`);
        continue;
      }
      const target = await stat(real).catch(() => undefined);
      if (target?.isFile()) {
        found(path, entry.name);
        // Edited in place where it lives, a linked file changes nothing in the folder that holds the link.
        folders.add(dirname(real));
        continue;
      }
      if (!target?.isDirectory()) continue;
      if (inside(real, realFolder)) {
        problem(path, `a link to ${relative(root, real) || '.'}, a folder that contains it (a loop): not followed`);
        continue;
      }
      if (visited.has(real)) {
        problem(path, `a link to ${relative(root, real)}, a folder already read: not followed`);
        continue;
      }
      visited.add(real);
      folders.add(path);
      await walk(path, real);
    }
  }

  await walk(dir, root);
  return { files, tests, problems, folders: [...folders] };
}
