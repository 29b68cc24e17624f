// The contract between replay's parts: what a decision-log line becomes (record.ts), what replaying
// it against a candidate folder gives (replay.ts), and the report every format prints (report.ts,
// formats.ts). The JSON format is this ReplayReport as it is: scripts and tests read it.
import type { DecisionInput } from '../policy/index.ts';

/** Why a line of a decision log was not replayed. Every line read is replayed, outside the window, or counted under one cause. */
export const CAUSES = [
  /** Not a JSON value: a truncated or garbled line (a file cut mid-write, a torn gzip member). */
  'not-json',
  /** JSON, but not one of our decision-log lines (no `"stream":"decisions"`, a field of the wrong type). */
  'not-ours',
  /** A decision line whose decision is not allow or deny (`error`, `undefined`, `other`: OPA queried another path). */
  'not-a-decision',
  /** An input the API would refuse (POST /authorization's or AuthZEN's 400): nothing to decide. */
  'refused-input',
  /** A line over MAX_LINE_BYTES. */
  'too-long',
  /** The candidate folder has no such tenant (namespace). */
  'unknown-tenant',
  /** An OPA decision on a bundle the candidate folder does not have. */
  'unknown-bundle',
] as const;
export type Cause = (typeof CAUSES)[number];

/** Lines longer than this are not parsed (counted as too-long); the service never writes one this long for a request within --max-body-bytes. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

export type Verdict = 'allow' | 'deny';

/** One decision as the log recorded it, its input checked as the API checks a request. */
export interface Recorded {
  /** `<source>:<line>`: the file (or `-` for stdin) and its 1-based line number. */
  readonly where: string;
  /** As recorded (ISO 8601), and in ms since the epoch. */
  readonly time: string;
  readonly timeMs: number;
  readonly tenant: string;
  /** Who decided: the service itself, or an OPA (from its decision-log upload). */
  readonly source: 'service' | 'opa';
  /** The service's endpoint (authorization, evaluation, evaluations); absent for OPA. */
  readonly endpoint?: string;
  /** The bundle OPA decided on (absent for the service's own decisions). */
  readonly bundle?: string;
  readonly decision: Verdict;
  /** The allowing rule's name, when the line says (a service allow: policyId `<tenant>/<rule>`). */
  readonly rule?: string;
  /** The input, checked: what the candidate decides. */
  readonly input: DecisionInput;
  /** The input exactly as logged (already redacted by the log): what an example shows. */
  readonly logged: unknown;
}

export type LineResult = { readonly ok: true; readonly record: Recorded } | Unreplayable;

export interface Unreplayable {
  readonly ok: false;
  readonly cause: Cause;
  readonly where: string;
  /** One sentence: what was wrong (never the whole line). */
  readonly detail: string;
}

/** How a replayed decision compares with the recorded one. */
export type Change = 'unchanged' | 'allow-to-deny' | 'deny-to-allow';

/** One record decided again by the candidate (natively). */
export interface Replayed {
  readonly record: Recorded;
  readonly decision: Verdict;
  /** The rule that allows now (absent on deny). */
  readonly rule?: string;
  readonly change: Change;
}

export interface Counts {
  readonly replayed: number;
  readonly unchanged: number;
  readonly allowToDeny: number;
  readonly denyToAllow: number;
}

export interface Example {
  readonly where: string;
  readonly time: string;
  /** The input as logged, cut to MAX_EXAMPLE_BYTES of JSON text when longer (with a note). */
  readonly input: unknown;
}

/** Examples kept per group (the first ones met, in log order): flat memory whatever the log's size. */
export const EXAMPLES_PER_GROUP = 3;
export const MAX_EXAMPLE_BYTES = 2048;
/**
 * Flip groups a report keeps (the first ones met, in log order): a hostile log with endless distinct
 * types or actions cannot grow memory. Flips of further groups are counted in `otherGroupFlips`.
 */
export const MAX_GROUPS = 1000;

/** Flips that share tenant, bundle, direction, (subject type, action, resource type) and the rule before and after. */
export interface FlipGroup {
  readonly tenant: string;
  /** null: the service's own decisions (both APIs); else the OPA bundle decided on. */
  readonly bundle: string | null;
  readonly change: Exclude<Change, 'unchanged'>;
  readonly subjectType: string;
  readonly action: string;
  readonly resourceType: string;
  /** The rule that allowed before (null: deny, or OPA, whose log does not name the rule). */
  readonly ruleBefore: string | null;
  /** The rule that allows now (null: deny). */
  readonly ruleAfter: string | null;
  readonly count: number;
  readonly examples: readonly Example[];
}

export interface TargetCounts {
  readonly tenant: string;
  /** null: the service's own decisions. */
  readonly bundle: string | null;
  readonly counts: Counts;
}

/** What a real OPA decided on the candidate's bundles (replay --opa). */
export interface OpaReplay {
  readonly version: string;
  /** Decisions OPA made (an OPA line on its bundle; a service line on each bundle of its tenant that admits it). */
  readonly decided: number;
  readonly counts: Counts;
  /** OPA's decisions that differ from the native replay's (should be 0: the same rules). */
  readonly disagreements: number;
  readonly disagreementExamples: readonly (Example & { readonly bundle: string; readonly opa: Verdict; readonly native: Verdict })[];
}

export interface Gate {
  /** Flips counted against --max-flips: every flip, or only allow → deny with --allow-direction deny-to-allow. */
  readonly flips: number;
  readonly maxFlips: number;
  readonly allowDirection: 'deny-to-allow' | undefined;
  /** With --opa: OPA's decisions that differ from the native replay's. Any fails the gate (the translation is wrong), as in `test --opa`. */
  readonly disagreements: number;
  readonly passed: boolean;
}

export interface ReplayReport {
  readonly manifests: string;
  /** The files read, in the order read (`-` for stdin). */
  readonly sources: readonly string[];
  readonly since: string | undefined;
  readonly until: string | undefined;
  /** Lines read (blank lines are not counted). */
  readonly lines: number;
  /** Decisions outside --since/--until (not replayed, not a problem). */
  readonly outsideWindow: number;
  readonly totals: Counts;
  readonly unreplayable: Readonly<Record<Cause, number>>;
  /** The first few lines of each cause. */
  readonly unreplayableExamples: readonly Unreplayable[];
  /** Sorted by tenant, then bundle (null first). */
  readonly targets: readonly TargetCounts[];
  /** Sorted by count (most first), then tenant, bundle, change, types, action, rules. */
  readonly groups: readonly FlipGroup[];
  /** Flips of groups met after MAX_GROUPS were kept: counted, not grouped (0 unless the log is unusual). */
  readonly otherGroupFlips: number;
  readonly opa: OpaReplay | undefined;
  readonly gate: Gate;
}
