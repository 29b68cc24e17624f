// One cold read of test files, for bench/policytest.ts: `node bench/policytest-read.ts <checkout> <file>...`
// reads each file in this fresh process with the reader `acl-operator test` uses in <checkout> (this
// tree or an older commit): readTestFile of src/policytest/pieces.ts, else readSource of source.ts
// (the same signature), and prints what it cost as JSON: the CPU time of the process (its GC threads
// included) and the wall time, imports excluded.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

interface Source {
  readonly value: unknown;
  position(path: readonly (string | number)[]): { readonly line: number };
}
type ReadSource = (file: string, text: string) => Source | readonly unknown[];

const [checkout, ...files] = process.argv.slice(2);
if (checkout === undefined || files.length === 0) throw new Error('usage: node bench/policytest-read.ts <checkout> <file>...');
const pieces = join(checkout, 'src', 'policytest', 'pieces.ts');
const readSource = existsSync(pieces)
  ? ((await import(pathToFileURL(pieces).href)) as { readTestFile: ReadSource }).readTestFile
  : ((await import(pathToFileURL(join(checkout, 'src', 'policytest', 'source.ts')).href)) as { readSource: ReadSource }).readSource;
const texts = files.map((f) => readFileSync(f, 'utf8'));
const cpu0 = process.cpuUsage();
const started = performance.now();
let cases = 0;
for (const [i, text] of texts.entries()) {
  const source = readSource(files[i] as string, text);
  if (Array.isArray(source)) throw new Error(`${files[i]}: ${JSON.stringify(source.slice(0, 3))}`);
  const read = source as Source;
  const items = (read.value as { cases: unknown[] }).cases;
  // Each case's line, as the report gives it.
  for (let c = 0; c < items.length; c++) read.position(['cases', c]);
  cases += items.length;
}
const wallMs = performance.now() - started;
const used = process.cpuUsage(cpu0);
console.log(JSON.stringify({ cases, cpuMs: (used.user + used.system) / 1000, wallMs }));
