// A V8 heap snapshot (.heapsnapshot, as v8.writeHeapSnapshot writes it) summed by what each node is:
// objects by constructor name, everything else by its V8 type (strings, code, closures, arrays...);
// and objects by shape (constructor and property names), which tells our structures apart.
// The file is read as bytes and its `nodes` array scanned by hand: a 10,000-rule service's snapshot
// is several hundred MB, past what one JSON.parse of the whole text can take.
import { readFileSync } from 'node:fs';

/** Self size and count of the nodes of one kind. */
export interface Kind {
  readonly bytes: number;
  readonly count: number;
}

interface Meta {
  readonly snapshot: {
    readonly meta: {
      readonly node_fields: readonly string[];
      readonly node_types: readonly [readonly string[]];
      readonly edge_fields: readonly string[];
      readonly edge_types: readonly [readonly string[]];
    };
  };
}

/** A heap summed two ways: by kind (see kindOf), and objects by shape (constructor and property names). */
export interface HeapSummary {
  readonly kinds: Map<string, Kind>;
  readonly shapes: Map<string, Kind>;
}

const NAMED = new Set(['object', 'native', 'synthetic']);
const DETAILED = new Set(['array', 'hidden', 'object shape']);

/** The name a node is counted under: DevTools' "constructor" for objects, its type otherwise. */
function kindOf(type: string, name: string): string {
  if (NAMED.has(type)) return name;
  if (DETAILED.has(type)) return name ? `(${type}) ${name}` : `(${type})`;
  if (type === 'concatenated string' || type === 'sliced string') return '(string)';
  return `(${type})`;
}

/** Parses the unsigned integers of a JSON array starting at `from` (just after its `[`). */
function integers(bytes: Buffer, from: number): Uint32Array {
  const out: number[] = [];
  let n = 0;
  let inNumber = false;
  for (let i = from; i < bytes.length; i++) {
    const c = bytes[i] as number;
    if (c >= 48 && c <= 57) {
      n = n * 10 + (c - 48);
      inNumber = true;
    } else {
      if (inNumber) out.push(n);
      n = 0;
      inNumber = false;
      if (c === 93) break; // ]
    }
  }
  return Uint32Array.from(out);
}

function add(map: Map<string, Kind>, key: string, bytes: number): void {
  const k = map.get(key);
  map.set(key, { bytes: bytes + (k?.bytes ?? 0), count: 1 + (k?.count ?? 0) });
}

/**
 * Self sizes over a heap snapshot file, by kind, and objects by shape: `Object {kind,metadata,raw}`
 * names a structure of ours where a constructor name alone says `Object`.
 */
export function heapSummary(file: string): HeapSummary {
  const bytes = readFileSync(file);
  const nodesAt = bytes.indexOf('"nodes":[');
  const edgesAt = bytes.indexOf('"edges":[');
  const stringsAt = bytes.lastIndexOf('"strings":[');
  if (nodesAt < 0 || edgesAt < 0 || stringsAt < 0) throw new Error(`${file} is not a V8 heap snapshot`);
  const head = bytes.subarray(0, nodesAt).toString('utf8').trimEnd().replace(/,$/, '');
  const meta = (JSON.parse(`${head}}`) as Meta).snapshot.meta;
  const strings = JSON.parse(bytes.subarray(stringsAt + '"strings":'.length, bytes.lastIndexOf(']') + 1).toString('utf8')) as string[];
  const nodes = integers(bytes, nodesAt + '"nodes":['.length);
  const edges = integers(bytes, edgesAt + '"edges":['.length);
  const width = meta.node_fields.length;
  const typeAt = meta.node_fields.indexOf('type');
  const nameAt = meta.node_fields.indexOf('name');
  const sizeAt = meta.node_fields.indexOf('self_size');
  const edgeCountAt = meta.node_fields.indexOf('edge_count');
  const edgeWidth = meta.edge_fields.length;
  const edgeTypeAt = meta.edge_fields.indexOf('type');
  const edgeNameAt = meta.edge_fields.indexOf('name_or_index');
  const property = meta.edge_types[0].indexOf('property');
  const types = meta.node_types[0];
  const kinds = new Map<string, Kind>();
  const shapes = new Map<string, Kind>();
  let edge = 0;
  for (let i = 0; i + width <= nodes.length; i += width) {
    const type = types[nodes[i + typeAt] as number] ?? '?';
    const name = strings[nodes[i + nameAt] as number] ?? '?';
    const size = nodes[i + sizeAt] as number;
    const edgeCount = nodes[i + edgeCountAt] as number;
    add(kinds, kindOf(type, name), size);
    if (type === 'object') {
      const props: string[] = [];
      for (let e = edge; e < edge + edgeCount * edgeWidth && props.length < 10; e += edgeWidth) {
        const prop = edges[e + edgeTypeAt] === property ? strings[edges[e + edgeNameAt] as number] : undefined;
        if (prop !== undefined && prop !== '__proto__') props.push(prop);
      }
      add(shapes, `${name} {${props.join(',')}}`, size);
    }
    edge += edgeCount * edgeWidth;
  }
  return { kinds, shapes };
}

/** Kinds by growth from `base` to `loaded`, largest first: bytes and count added. */
export function growth(
  base: ReadonlyMap<string, Kind>,
  loaded: ReadonlyMap<string, Kind>,
): { kind: string; bytes: number; count: number }[] {
  return [...loaded]
    .map(([kind, k]) => ({ kind, bytes: k.bytes - (base.get(kind)?.bytes ?? 0), count: k.count - (base.get(kind)?.count ?? 0) }))
    .sort((a, b) => b.bytes - a.bytes);
}
