// Writes crds/*.yaml from the zod schemas in src/api (`make crds`).
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderCrdKustomization, renderCrds } from '../src/api/index.ts';

const dir = join(import.meta.dirname, '..', 'crds');
mkdirSync(dir, { recursive: true });
const files = [...renderCrds(), { file: 'Kustomization', yaml: renderCrdKustomization() }];
for (const stale of readdirSync(dir).filter((f) => f.endsWith('.yaml') && !files.some((c) => c.file === f))) rmSync(join(dir, stale));
for (const { file, yaml } of files) {
  writeFileSync(join(dir, file), yaml);
  console.log(`wrote crds/${file}`);
}
