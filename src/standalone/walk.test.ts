import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walkManifests } from './walk.ts';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'acl-walk-'));
  await mkdir(join(dir, 'team', 'cases'), { recursive: true });
  for (const f of [
    'rules.yaml',
    'more.yml',
    'rules.test.yaml',
    'team/cases/a.test.yml',
    'team/B.TEST.YAML',
    'team/latest.yaml',
    'notes.txt',
  ]) {
    await writeFile(join(dir, f), 'x: 1\n');
  }
  // A test file reached through a link is still a test file, never a manifest.
  await symlink('rules.test.yaml', join(dir, 'linked.test.yaml'));
  await symlink('rules.yaml', join(dir, 'linked.yaml'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('walkManifests', () => {
  it('lists test files apart from the manifests, so serve and render never read them as manifests', async () => {
    const walked = await walkManifests(dir);
    const names = (paths: readonly string[]): string[] => paths.map((p) => relative(dir, p));
    expect(names(walked.files)).toEqual(['linked.yaml', 'more.yml', 'rules.yaml', 'team/latest.yaml']);
    expect(names(walked.tests)).toEqual(['linked.test.yaml', 'rules.test.yaml', 'team/B.TEST.YAML', 'team/cases/a.test.yml']);
    expect(walked.problems).toEqual([]);
  });
});
