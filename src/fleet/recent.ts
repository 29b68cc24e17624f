// The newest decisions OPA reported, per bundle: what `GET .../bundles/{bundle}/decisions` and
// `acl-operator status --bundle` show. Bounded: RECENT_PER_BUNDLE per bundle, and an input or
// result larger than MAX_KEPT_BYTES (json.ts) is replaced by a note (the decision log keeps it whole).
import type { DecisionResult } from './events.ts';
import { keptForRecent, redact } from './json.ts';
import { createKeyedRings } from '../store/index.ts';

export const RECENT_PER_BUNDLE = 100;

export interface RecentDecision {
  /** When OPA decided (its clock, ISO 8601), or when the upload arrived if it did not say. */
  readonly time: string;
  readonly agent: string;
  readonly decisionId: string | undefined;
  readonly revision: string | undefined;
  readonly path: string | undefined;
  readonly decision: DecisionResult;
  readonly result: unknown;
  readonly input: unknown;
}

export interface RecentDecisions {
  /** Decisions kept per key: the newest. */
  readonly capacity: number;
  add(key: string, decision: RecentDecision): void;
  /** Adds decisions, oldest first, whose input and result were already bounded (keptForRecent: the uploads thread did it). */
  addKept(key: string, decisions: readonly RecentDecision[]): void;
  /** Newest first, credentials redacted. */
  list(key: string): RecentDecision[];
  /** Keys added to since the last call (for writing them out), cleared by the call. */
  takeChanged(): string[];
  forget(key: string): void;
  /** Decisions added since start: moves with every one (the console's live updates). */
  count(): number;
  /** Decisions added for one bundle (`<tenant>/<bundle>`) since its first or since it was forgotten: a tenant's live updates. */
  countOf(key: string): number;
  /** Loads decisions written out earlier (newest first). */
  restore(key: string, decisions: readonly RecentDecision[]): void;
}

export function createRecentDecisions(capacity = RECENT_PER_BUNDLE): RecentDecisions {
  const rings = createKeyedRings<RecentDecision>(capacity);
  return {
    capacity,
    add(key, d) {
      rings.add(key, { ...d, input: keptForRecent(d.input), result: keptForRecent(d.result) });
    },
    addKept(key, decisions) {
      for (const d of decisions.length > capacity ? decisions.slice(-capacity) : decisions) rings.add(key, d);
    },
    list: (key) => rings.newestFirst(key).map((d) => ({ ...d, input: redact(d.input), result: redact(d.result) })),
    takeChanged: () => rings.takeChanged(),
    forget: (key) => rings.forget(key),
    count: () => rings.added(),
    countOf: (key) => rings.addedTo(key),
    restore(key, decisions) {
      for (const d of [...decisions].slice(0, capacity).reverse())
        rings.load(key, { ...d, input: keptForRecent(d.input), result: keptForRecent(d.result) });
    },
  };
}
