import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createFolderWatcher, type FolderWatcher } from './watch.ts';

let dir = '';
let watcher: FolderWatcher | undefined;
afterEach(async () => {
  watcher?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A watcher of `root` whose changes are counted; `told()` resolves at the next change. */
function counting(root: string): { watcher: FolderWatcher; told: () => Promise<void>; failures: string[] } {
  let waiting: (() => void) | undefined;
  const failures: string[] = [];
  const w = createFolderWatcher({
    root,
    onChange: () => waiting?.(),
    onFailure: (folder, err) => failures.push(`${folder}: ${err.message}`),
  });
  watcher = w;
  return {
    watcher: w,
    told: () =>
      new Promise((resolve) => {
        waiting = resolve;
      }),
    failures,
  };
}

describe('the folder watcher', () => {
  it('tells of a file replaced by a rename, and of a write to the replacement after it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'acl-watch-'));
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(join(manifests, 'a.yaml'), 'one');
    const c = counting(manifests);
    expect(await c.watcher.sync([manifests])).toBe(true);
    for (let i = 0; i < 5; i++) {
      // Written outside the watched folder: the rename is the only thing that happens in it.
      await writeFile(join(dir, 'aside'), `two ${i}`);
      let told = c.told();
      await rename(join(dir, 'aside'), join(manifests, 'a.yaml'));
      await told;
      told = c.told();
      await writeFile(join(manifests, 'a.yaml'), `three ${i}`);
      await told;
    }
    expect(c.failures).toEqual([]);
  });

  it('watches a folder again once it was replaced, and drops folders no longer named', async () => {
    dir = await mkdtemp(join(tmpdir(), 'acl-watch-'));
    const team = join(dir, 'team');
    await mkdir(team);
    const c = counting(dir);
    expect(await c.watcher.sync([dir, team])).toBe(true);
    expect(c.watcher.size()).toBe(2);
    // The same folders: nothing new begins.
    expect(await c.watcher.sync([dir, team])).toBe(false);
    await rename(team, join(dir, '.old'));
    await mkdir(team);
    expect(await c.watcher.sync([dir, team])).toBe(true);
    const told = c.told();
    await writeFile(join(team, 'b.yaml'), 'x');
    await told;
    expect(await c.watcher.sync([dir])).toBe(false);
    expect(c.watcher.size()).toBe(1);
  });

  it('watches the folder holding the manifests folder when that is a link, for the link only', async () => {
    dir = await mkdtemp(join(tmpdir(), 'acl-watch-'));
    await mkdir(join(dir, 'r1'));
    await mkdir(join(dir, 'r2'));
    const current = join(dir, 'current');
    await symlink('r1', current);
    const c = counting(current);
    await c.watcher.sync([current]);
    expect(c.watcher.size()).toBe(2);
    const told = c.told();
    await symlink('r2', join(dir, 'current.next'));
    await rename(join(dir, 'current.next'), current);
    await told;
    // Now leading to r2: the watch on `current` is on r2 after the next sync.
    expect(await c.watcher.sync([current])).toBe(true);
    const again = c.told();
    await writeFile(join(current, 'c.yaml'), 'x');
    await again;
  });

  it('skips a folder that is gone by the time it is watched, and watches nothing once closed', async () => {
    dir = await mkdtemp(join(tmpdir(), 'acl-watch-'));
    const c = counting(dir);
    expect(await c.watcher.sync([dir, join(dir, 'gone')])).toBe(true);
    expect(c.watcher.size()).toBe(1);
    expect(c.failures).toEqual([]);
    c.watcher.close();
    expect(c.watcher.size()).toBe(0);
    expect(await c.watcher.sync([dir])).toBe(false);
  });
});
