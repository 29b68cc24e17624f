// Where a heap's bytes go: a .heapsnapshot (v8.writeHeapSnapshot; probe-dir.ts writes one with
// HEAP_SNAPSHOT=<file>) summed by kind of node, objects by constructor name, largest first.
//   node bench/steady/heap-types.ts <file.heapsnapshot> [per=<n>]   per=: also bytes per n (entities)
import { readFileSync } from 'node:fs';

interface Snapshot {
  readonly snapshot: { readonly meta: { readonly node_fields: string[]; readonly node_types: [string[], ...unknown[]] } };
  readonly nodes: number[];
  readonly strings: string[];
}

const [file, perArg] = process.argv.slice(2);
if (!file) throw new Error('usage: node bench/steady/heap-types.ts <file.heapsnapshot> [per=<n>]');
const per = perArg?.startsWith('per=') ? Number(perArg.slice(4)) : undefined;
const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const fields = snap.snapshot.meta.node_fields;
const types = snap.snapshot.meta.node_types[0];
const width = fields.length;
const [ti, ni, si] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
const sums = new Map<string, { bytes: number; count: number }>();
let total = 0;
for (let i = 0; i < snap.nodes.length; i += width) {
  const type = types[snap.nodes[i + ti] as number] as string;
  const name = type === 'object' || type === 'closure' ? `${type} ${snap.strings[snap.nodes[i + ni] as number]}` : type;
  const size = snap.nodes[i + si] as number;
  total += size;
  const s = sums.get(name) ?? { bytes: 0, count: 0 };
  s.bytes += size;
  s.count++;
  sums.set(name, s);
}
const mb = (b: number): string => (b / 2 ** 20).toFixed(1);
console.log(`total self size ${mb(total)} MB${per ? `, ${(total / per).toFixed(0)} bytes per ${per.toLocaleString('en')}th` : ''}`);
for (const [name, s] of [...sums].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 25))
  console.log(
    `${mb(s.bytes).padStart(8)} MB ${String(s.count).padStart(9)} ${per ? `${(s.bytes / per).toFixed(1).padStart(7)} B/entity ` : ''}${name.slice(0, 80)}`,
  );
