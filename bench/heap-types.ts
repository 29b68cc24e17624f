// Where a heap's bytes go (node bench/heap-types.ts <file.heapsnapshot> [rows]): self sizes by node
// type, and by type and constructor. Take the snapshot with `node --heapsnapshot-signal=SIGUSR2` and
// `kill -USR2 <pid>` (it collects garbage first, so this is the live heap). Large snapshots need
// `node --max-old-space-size=6000`.
import { readFileSync } from 'node:fs';

interface Snapshot {
  readonly snapshot: { readonly meta: { readonly node_fields: string[]; readonly node_types: [string[]] } };
  readonly nodes: number[];
  readonly strings: string[];
}

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node bench/heap-types.ts <file.heapsnapshot> [rows]\n');
  process.exit(2);
}
const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const fields = snap.snapshot.meta.node_fields;
const types = snap.snapshot.meta.node_types[0];
const width = fields.length;
const [iType, iName, iSize] = [fields.indexOf('type'), fields.indexOf('name'), fields.indexOf('self_size')];
const named = new Set(['object', 'closure', 'native', 'hidden', 'array']);
const byKey = new Map<string, { bytes: number; count: number }>();
const byType = new Map<string, number>();
let total = 0;
for (let i = 0; i < snap.nodes.length; i += width) {
  const type = types[snap.nodes[i + iType] as number] as string;
  const size = snap.nodes[i + iSize] as number;
  const key = named.has(type) ? `${type} ${(snap.strings[snap.nodes[i + iName] as number] as string).slice(0, 60)}` : type;
  const e = byKey.get(key) ?? { bytes: 0, count: 0 };
  e.bytes += size;
  e.count++;
  byKey.set(key, e);
  byType.set(type, (byType.get(type) ?? 0) + size);
  total += size;
}
const mb = (n: number): string => (n / 2 ** 20).toFixed(1).padStart(7);
console.log(`live heap (self sizes): ${mb(total)} MB`);
for (const [type, bytes] of [...byType].sort((a, b) => b[1] - a[1])) console.log(`  ${mb(bytes)} MB  ${type}`);
console.log('by type and constructor (MB, count):');
for (const [key, e] of [...byKey].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, Number(process.argv[3] ?? 25)))
  console.log(`  ${mb(e.bytes)} MB  ${String(e.count).padStart(8)}  ${key}`);
