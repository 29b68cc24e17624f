// Counting a replay as it streams by: totals, counts per tenant and bundle, flips grouped by what they
// share, unreplayable lines by cause, each with the first few examples in log order. Memory grows with
// the number of distinct groups (capped at MAX_GROUPS), never with the number of lines.
import { codePointCompare } from '../policy/index.ts';
import {
  CAUSES,
  type Cause,
  type Change,
  type Counts,
  EXAMPLES_PER_GROUP,
  type Example,
  type FlipGroup,
  type Gate,
  MAX_EXAMPLE_BYTES,
  MAX_GROUPS,
  type OpaReplay,
  type Recorded,
  type Replayed,
  type ReplayReport,
  type TargetCounts,
  type Unreplayable,
} from './types.ts';

export interface ReportOptions {
  readonly manifests: string;
  /** The files read so far: a live array, read when the report is built. */
  readonly sources: readonly string[];
  readonly since?: string | undefined;
  readonly until?: string | undefined;
  readonly maxFlips: number;
  readonly allowDirection?: 'deny-to-allow' | undefined;
}

export interface ReportBuilder {
  /** A non-blank line was read. */
  line(): void;
  /** A decision outside --since/--until. */
  outside(): void;
  unreplayable(u: Unreplayable): void;
  replayed(r: Replayed): void;
  opa(o: OpaReplay): void;
  build(): ReplayReport;
}

interface MutableCounts {
  replayed: number;
  unchanged: number;
  allowToDeny: number;
  denyToAllow: number;
}

const zero = (): MutableCounts => ({ replayed: 0, unchanged: 0, allowToDeny: 0, denyToAllow: 0 });

/** Adds one replayed decision's change to counts. */
export function countChange(c: MutableCounts, change: Change): void {
  c.replayed++;
  if (change === 'unchanged') c.unchanged++;
  else if (change === 'allow-to-deny') c.allowToDeny++;
  else c.denyToAllow++;
}

/** UTF-8 bytes of text cut to at most `max` bytes, never inside a character. */
function cutUtf8(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let end = max;
  // A UTF-8 continuation byte has 10 in its top two bits: step back over them so the cut falls between characters.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/** A record as an example: its input as logged, or its JSON text cut to MAX_EXAMPLE_BYTES with a note saying so. */
export function exampleOf(record: Recorded): Example {
  const text = JSON.stringify(record.logged) ?? 'null';
  const size = Buffer.byteLength(text, 'utf8');
  if (size <= MAX_EXAMPLE_BYTES) return { where: record.where, time: record.time, input: record.logged };
  return { where: record.where, time: record.time, input: `${cutUtf8(text, MAX_EXAMPLE_BYTES)}… (cut: ${size} bytes of JSON)` };
}

interface Group {
  readonly key: Omit<FlipGroup, 'count' | 'examples'>;
  count: number;
  readonly examples: Example[];
}

/** One map key for several strings (absent ones too): each length-prefixed, so no two lists share a key whatever they hold. */
function keyOf(parts: readonly (string | undefined)[]): string {
  let key = '';
  for (const p of parts) key += p === undefined ? '-;' : `${p.length}:${p};`;
  return key;
}

const typeText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

/** null first, then by code point. */
function compareNullable(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return codePointCompare(a, b);
}

/** The report's group order: count (most first), then tenant, bundle, change, types, action, rules. */
function compareGroups(a: FlipGroup, b: FlipGroup): number {
  return (
    b.count - a.count ||
    codePointCompare(a.tenant, b.tenant) ||
    compareNullable(a.bundle, b.bundle) ||
    codePointCompare(a.change, b.change) ||
    codePointCompare(a.subjectType, b.subjectType) ||
    codePointCompare(a.action, b.action) ||
    codePointCompare(a.resourceType, b.resourceType) ||
    compareNullable(a.ruleBefore, b.ruleBefore) ||
    compareNullable(a.ruleAfter, b.ruleAfter)
  );
}

/** Counts per tenant and bundle. */
function createTargets(): { of(tenant: string, bundle: string | undefined): MutableCounts; sorted(): TargetCounts[] } {
  /** By tenant, then bundle ('' for the service's own: a bundle's name is never empty). */
  const targets = new Map<string, Map<string, { tenant: string; bundle: string | null; counts: MutableCounts }>>();
  return {
    of(tenant, bundle) {
      let own = targets.get(tenant);
      if (own === undefined) {
        own = new Map();
        targets.set(tenant, own);
      }
      let t = own.get(bundle ?? '');
      if (t === undefined) {
        t = { tenant, bundle: bundle ?? null, counts: zero() };
        own.set(bundle ?? '', t);
      }
      return t.counts;
    },
    sorted: () =>
      [...targets.values()]
        .flatMap((own) => [...own.values()])
        .map((t) => ({ tenant: t.tenant, bundle: t.bundle, counts: { ...t.counts } as Counts }))
        .sort((a, b) => codePointCompare(a.tenant, b.tenant) || compareNullable(a.bundle, b.bundle)),
  };
}

/** The gate: the flips it counts within --max-flips, and (with --opa) OPA agreeing with every native decision, as `test --opa` asks. */
function gateOf(o: ReportOptions, totals: Counts, opa: OpaReplay | undefined): Gate {
  const flips = totals.allowToDeny + (o.allowDirection === 'deny-to-allow' ? 0 : totals.denyToAllow);
  const disagreements = opa?.disagreements ?? 0;
  return {
    flips,
    maxFlips: o.maxFlips,
    allowDirection: o.allowDirection,
    disagreements,
    passed: flips <= o.maxFlips && disagreements === 0,
  };
}

/** Counts a replay line by line; build() gives the report (deterministic for the same lines in the same order). */
export function createReportBuilder(o: ReportOptions): ReportBuilder {
  let lines = 0;
  let outsideWindow = 0;
  let otherGroupFlips = 0;
  let opa: OpaReplay | undefined;
  const totals = zero();
  const causes = Object.fromEntries(CAUSES.map((c) => [c, 0])) as Record<Cause, number>;
  const causeExamples = new Map<Cause, Unreplayable[]>();
  const targets = createTargets();
  const groups = new Map<string, Group>();

  const group = (r: Replayed, change: Exclude<Change, 'unchanged'>): void => {
    const rec = r.record;
    const subjectType = typeText(rec.input.principal['type']);
    const resourceType = typeText(rec.input.resource['type']);
    const parts = [rec.tenant, rec.bundle, change, subjectType, rec.input.action, resourceType, rec.rule, r.rule];
    const id = keyOf(parts);
    let g = groups.get(id);
    if (g === undefined) {
      if (groups.size >= MAX_GROUPS) {
        otherGroupFlips++;
        return;
      }
      const key: Group['key'] = {
        tenant: rec.tenant,
        bundle: rec.bundle ?? null,
        change,
        subjectType,
        action: rec.input.action,
        resourceType,
        ruleBefore: rec.rule ?? null,
        ruleAfter: r.rule ?? null,
      };
      g = { key, count: 0, examples: [] };
      groups.set(id, g);
    }
    g.count++;
    if (g.examples.length < EXAMPLES_PER_GROUP) g.examples.push(exampleOf(rec));
  };

  return {
    line: () => {
      lines++;
    },
    outside: () => {
      outsideWindow++;
    },
    unreplayable: (u) => {
      causes[u.cause]++;
      const list = causeExamples.get(u.cause) ?? [];
      if (list.length < EXAMPLES_PER_GROUP) list.push(u);
      causeExamples.set(u.cause, list);
    },
    replayed: (r) => {
      countChange(totals, r.change);
      countChange(targets.of(r.record.tenant, r.record.bundle), r.change);
      if (r.change !== 'unchanged') group(r, r.change);
    },
    opa: (x) => {
      opa = x;
    },
    build: () => {
      const sortedGroups: FlipGroup[] = [...groups.values()]
        .map((g) => ({ ...g.key, count: g.count, examples: [...g.examples] }))
        .sort(compareGroups);
      return {
        manifests: o.manifests,
        sources: [...o.sources],
        since: o.since,
        until: o.until,
        lines,
        outsideWindow,
        totals: { ...totals },
        unreplayable: { ...causes },
        unreplayableExamples: CAUSES.flatMap((c) => causeExamples.get(c) ?? []),
        targets: targets.sorted(),
        groups: sortedGroups,
        otherGroupFlips,
        opa,
        gate: gateOf(o, totals, opa),
      };
    },
  };
}
