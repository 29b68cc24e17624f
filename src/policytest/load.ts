// A test file's text → its value (js-yaml), and where each case starts. js-yaml reads YAML 1.2 with its
// core schema, as the yaml package the manifests are read with does, so a test file means what a
// manifest would. Where the two differ, one pass over js-yaml's parser events (before the value is
// built) refuses what js-yaml alone would read (test/policytest/yaml.test.ts compares them on generated
// and mutated texts), records where each case starts, and bounds what aliases repeat; the schema reads
// numbers too large for a double as the yaml package does.
import {
  COLLECTION_STYLE,
  CORE_SCHEMA,
  constructFromEvents,
  defineScalarTag,
  EVENT_ID,
  type AliasEvent,
  type DocumentEvent,
  type Event,
  type MappingEvent,
  type ScalarEvent,
  type SequenceEvent,
  floatCoreTag,
  getScalarValue,
  NOT_RESOLVED,
  parseEvents,
  SCALAR_STYLE,
  YAMLException,
} from 'js-yaml';

export interface Loaded {
  readonly value: unknown;
  /** Where each item of the top-level `cases` starts, for the items that are mappings (else -1). */
  readonly caseOffsets: readonly number[];
  /** Whether a node has an explicit tag (`!!str 1`): js-yaml resolves some the yaml package cannot. */
  readonly tagged: boolean;
}

/** At most this many aliases (the yaml package's maxAliasCount, for aliases of nodes without aliases). */
const MAX_ALIASES = 100;
/** At most this many nodes repeated by aliases: aliases of aliases grow without bound otherwise. */
const MAX_REPEATED_NODES = 1_000_000;

/** A number the yaml package reads as one (±Infinity when too large), where js-yaml keeps the text. */
const CORE_NUMBER = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;

/** js-yaml's core schema, but a number too large for a double is ±Infinity, as in the yaml package (js-yaml: a string). */
const SCHEMA = CORE_SCHEMA.withTags(
  defineScalarTag('tag:yaml.org,2002:float', {
    implicit: true,
    implicitFirstChars: floatCoreTag.implicitFirstChars,
    resolve: (source, isExplicit, tagName) => {
      const value = floatCoreTag.resolve(source, isExplicit, tagName);
      return value === NOT_RESOLVED && CORE_NUMBER.test(source) ? Number(source) : value;
    },
    identify: floatCoreTag.identify,
    represent: floatCoreTag.represent,
  }),
);

type NodeEvent = SequenceEvent | MappingEvent | ScalarEvent | AliasEvent;

/** An open document or collection while the events are read. */
interface Frame {
  readonly map: boolean;
  /** Block style, not flow. */
  readonly block: boolean;
  /** Whether it is the top-level mapping. */
  readonly root: boolean;
  readonly anchor: string | undefined;
  /** Nodes inside it so far, aliases counted as the nodes they repeat. */
  nodes: number;
  /** Node events directly inside it (a mapping's keys are the even ones). */
  children: number;
  /** Where its last key starts (a block mapping). */
  keyAt: number;
  /** Set on the top-level `cases` sequence: its items' offsets. */
  readonly items: number[] | undefined;
}

/** What an anchor names: its nodes, and what a key that is its alias would be. */
interface Anchor {
  readonly nodes: number;
  readonly kind: 'null' | 'scalar' | 'collection';
}

interface Walk {
  readonly text: string;
  readonly events: readonly Event[];
  readonly anchors: Map<string, Anchor>;
  aliases: number;
  /** Nodes repeated by the aliases so far. */
  repeated: number;
  tagged: boolean;
}

const NULL_TEXTS = new Set(['', '~', 'null', 'Null', 'NULL']);

function fail(walk: Walk, at: number, message: string): never {
  return YAMLException.throwAt(walk.text, at, message);
}

function anchorOf(text: string, e: NodeEvent): string | undefined {
  return e.anchorStart < 0 ? undefined : text.slice(e.anchorStart, e.anchorEnd);
}

/** Where a node's event starts (its anchor or tag included); -1 for an empty scalar without either. */
function startOf(e: Event): number {
  if (e.type === EVENT_ID.DOCUMENT || e.type === EVENT_ID.POP) return -1;
  if (e.type === EVENT_ID.ALIAS) return e.anchorStart - 1;
  const own = e.type !== EVENT_ID.SCALAR ? e.start : e.valueStart < 0 || e.style === SCALAR_STYLE.PLAIN ? e.valueStart : e.valueStart - 1;
  let start = own;
  if (e.anchorStart >= 0 && (start < 0 || e.anchorStart < start)) start = e.anchorStart;
  if (e.tagStart >= 0 && (start < 0 || e.tagStart < start)) start = e.tagStart;
  return start;
}

/** Where the first node after event i starts (the text's end when none does). */
function nextStart(walk: Walk, i: number): number {
  for (let j = i + 1; j < walk.events.length; j++) {
    const start = startOf(walk.events[j] as Event);
    if (start >= 0) return start;
  }
  return walk.text.length;
}

/** A plain scalar the core schema reads as null: `null`, `~`, or nothing. */
function isNull(text: string, e: ScalarEvent): boolean {
  if (e.style !== SCALAR_STYLE.PLAIN || e.tagStart >= 0 || e.valueEnd - e.valueStart > 4) return false;
  return NULL_TEXTS.has(e.valueStart < 0 ? '' : text.slice(e.valueStart, e.valueEnd));
}

/** Whether only indentation (and a `?`) comes before `at` on its line. */
function beginsLine(text: string, at: number): boolean {
  let p = at - 1;
  while (p >= 0 && text[p] === ' ') p--;
  if (text[p] === '?') for (p--; p >= 0 && text[p] === ' '; ) p--;
  return p < 0 || text[p] === '\n';
}

/** What js-yaml reads in a document's start and the yaml package does not: %YAML 1.1, an indented ---. */
function refuseStart(walk: Walk, i: number): void {
  const e = walk.events[i] as DocumentEvent;
  if (e.explicitStart) {
    const content = nextStart(walk, i);
    if (!/^---(?:[ \t\r\n]|$)/m.test(walk.text.slice(0, content))) {
      fail(walk, Math.max(0, walk.text.indexOf('---')), 'a document starts with --- at the start of a line');
    }
  }
  for (const d of e.directives) {
    // The yaml package reads a 1.1 document with YAML 1.1's schema (yes is true, 0o17 a string).
    if (d.kind === 'yaml' && d.version !== '1.2') {
      fail(walk, Math.max(0, walk.text.search(/^%YAML/m)), `a test file is YAML 1.2: remove the line %YAML ${d.version}`);
    }
  }
}

/**
 * A mapping key js-yaml and the yaml package read differently: null (`null:`, `~:`, none at all; the
 * yaml package makes it "", js-yaml "null") or a list or a mapping (the yaml package makes it a text
 * like "[ a, b ]" and warns on stderr); and a key of a block mapping that does not start its line
 * (js-yaml reads `- "a" b: 1` under a key as an item, then a key of the mapping around).
 */
function refuseKey(walk: Walk, i: number, parent: Frame): void {
  const e = walk.events[i] as NodeEvent;
  const aliased = e.type === EVENT_ID.ALIAS ? walk.anchors.get(walk.text.slice(e.anchorStart, e.anchorEnd))?.kind : undefined;
  if (e.type === EVENT_ID.MAPPING || e.type === EVENT_ID.SEQUENCE || aliased === 'collection') {
    fail(walk, startOf(e), 'a key is a list or a mapping: a key is a text');
  }
  if ((e.type === EVENT_ID.SCALAR && isNull(walk.text, e)) || aliased === 'null') {
    let at = startOf(e);
    if (at < 0) {
      // No key written: point at its `:`, the last before what follows.
      at = Math.max(0, walk.text.lastIndexOf(':', nextStart(walk, i) - 1));
    }
    fail(walk, at, 'a key is missing or null: write the key, in quotes if it is the text "null" or "~"');
  }
  if (!parent.block) return;
  const at = startOf(e);
  if (parent.children > 0 && !beginsLine(walk.text, at)) fail(walk, at, 'a key of a block mapping starts its line');
  parent.keyAt = at;
}

/** What js-yaml reads at a node and the yaml package refuses or reads otherwise. */
function refuseNode(walk: Walk, i: number, parent: Frame): void {
  const e = walk.events[i] as NodeEvent;
  if (e.type !== EVENT_ID.ALIAS && e.tagStart >= 0) walk.tagged = true;
  if (e.type === EVENT_ID.MAPPING || e.type === EVENT_ID.SEQUENCE) {
    // js-yaml reads `&a[1]` and `![1]` as `&a [1]`.
    if (e.start === Math.max(e.anchorEnd, e.tagEnd)) fail(walk, e.start, 'an anchor or a tag must be followed by a space');
  }
  if (!parent.map) return;
  if (parent.children % 2 === 0) refuseKey(walk, i, parent);
  else if (parent.block && e.type === EVENT_ID.MAPPING && e.style === COLLECTION_STYLE.BLOCK) {
    // js-yaml reads `a: &x b: c` as a mapping under a.
    const newline = walk.text.indexOf('\n', parent.keyAt);
    if (newline < 0 || newline > e.start) fail(walk, e.start, 'a mapping under a key starts on a line of its own');
  }
}

/** Counts an alias and the nodes it repeats, within bounds; returns those nodes. */
function repeat(walk: Walk, e: AliasEvent): number {
  const nodes = walk.anchors.get(walk.text.slice(e.anchorStart, e.anchorEnd))?.nodes ?? 1;
  walk.aliases++;
  walk.repeated += nodes;
  if (walk.aliases > MAX_ALIASES) fail(walk, e.anchorStart - 1, `a test file has at most ${MAX_ALIASES} aliases (*name)`);
  if (walk.repeated > MAX_REPEATED_NODES) {
    fail(walk, e.anchorStart - 1, `aliases repeat more than ${MAX_REPEATED_NODES.toLocaleString('en')} nodes`);
  }
  return nodes;
}

function frame(map: boolean, block: boolean, root: boolean, anchor: string | undefined, items: number[] | undefined): Frame {
  return { map, block, root, anchor, nodes: 0, children: 0, keyAt: -1, items };
}

/** One pass over the events: the cases' offsets, or a YAMLException for what js-yaml alone would read. */
function readEvents(text: string, events: readonly Event[]): Omit<Loaded, 'value'> {
  const walk: Walk = { text, events, anchors: new Map(), aliases: 0, repeated: 0, tagged: false };
  const caseOffsets: number[] = [];
  const stack: Frame[] = [];
  let casesNext = false;
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as Event;
    if (e.type === EVENT_ID.DOCUMENT) {
      refuseStart(walk, i);
      stack.push(frame(false, false, false, undefined, undefined));
      continue;
    }
    const parent = stack[stack.length - 1];
    if (parent === undefined) continue;
    if (e.type === EVENT_ID.POP) {
      const done = stack.pop() as Frame;
      if (done.anchor !== undefined) walk.anchors.set(done.anchor, { nodes: done.nodes + 1, kind: 'collection' });
      const outer = stack[stack.length - 1];
      if (outer !== undefined) outer.nodes += done.nodes + 1;
      continue;
    }
    // A node inside `parent`: what js-yaml alone would read, a case, its size.
    refuseNode(walk, i, parent);
    const isKey = parent.map && parent.children % 2 === 0;
    const isCases = parent.root && !isKey && casesNext;
    if (parent.root) casesNext = isKey && e.type === EVENT_ID.SCALAR && getScalarValue(text, e) === 'cases';
    parent.children++;
    parent.items?.push(e.type === EVENT_ID.MAPPING ? e.start : -1);
    if (e.type === EVENT_ID.MAPPING || e.type === EVENT_ID.SEQUENCE) {
      const map = e.type === EVENT_ID.MAPPING;
      const items = isCases && !map ? caseOffsets : undefined;
      stack.push(frame(map, e.style === COLLECTION_STYLE.BLOCK, map && stack.length === 1, anchorOf(text, e), items));
    } else if (e.type === EVENT_ID.SCALAR) {
      const anchor = anchorOf(text, e);
      if (anchor !== undefined) walk.anchors.set(anchor, { nodes: 1, kind: isNull(text, e) ? 'null' : 'scalar' });
      parent.nodes++;
    } else parent.nodes += repeat(walk, e);
  }
  return { caseOffsets, tagged: walk.tagged };
}

/** Reads a test file's text; throws a YAMLException (with a mark where it has a place) when it cannot. */
export function loadTestFile(text: string): Loaded {
  const events = parseEvents(text, {});
  const read = readEvents(text, events);
  const documents = constructFromEvents(events, { source: text, schema: SCHEMA });
  if (documents.length > 1) throw new YAMLException('a test file holds one YAML document (no second ---)');
  return { value: documents[0] ?? null, ...read };
}
