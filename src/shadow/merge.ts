// status.shadow of one rule (docs/rules.md, "Shadow decisions"), pure: the recorded status plus the
// counts of every live replica session. `replicas` in status is the bookkeeping: each session's counts
// as they were when last summed, so a summing adds only what a session counted since. A session that
// is no longer live stays listed with its counts folded in (it may only be out of sight: a peer's
// ConfigMap not yet read), so a restart loses nothing and counts nothing twice.
import type { RuleShadowStatus } from '../api/index.ts';
import { SHADOW_EXAMPLES, type ShadowExample, type ShadowRole, type ShadowTally } from './types.ts';

/** One live replica session's tally of the rule. */
export interface LiveTally {
  readonly session: string;
  readonly tally: ShadowTally;
}

/** The bookkeeping list's bound (the schema's): sessions no longer live leave it first. */
const MAX_SESSIONS = 64;
const MAX_SESSION_CHARS = 128;

type Entry = NonNullable<RuleShadowStatus['replicas']>[number];
interface Counts {
  evaluated: number;
  matched: number;
  flips: number;
}

const ZERO: Counts = { evaluated: 0, matched: 0, flips: 0 };

/** "would allow 12 of 3,400" (Proposed), "would deny 5 of 880" (Removal), "no live decisions yet". */
export function shadowSummary(role: ShadowRole, flips: number, evaluated: number): string {
  if (evaluated === 0) return 'no live decisions yet';
  const n = (v: number): string => v.toLocaleString('en-US');
  return `would ${role === 'Proposed' ? 'allow' : 'deny'} ${n(flips)} of ${n(evaluated)}`;
}

const iso = (ms: number): string => new Date(ms).toISOString();
/** A recorded time in ms; undefined when absent or unreadable (a state folder edited by hand: ISO text of NaN throws). */
function msOf(t: string | undefined): number | undefined {
  const ms = t === undefined ? Number.NaN : Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
function latest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.max(a, b);
}

/**
 * A session's tally named by its session and when it began: a ledger that starts a tally again (a
 * new compiled rule, the role back) makes a new entry, so what the old one counted stays summed.
 */
function sessionKey({ session, tally }: LiveTally): string {
  const key = tally.firstMs === undefined ? session : `${session}~${tally.firstMs.toString(36)}`;
  // The schema's bound; the end (start and first times) is what tells runs of one host apart.
  return key.length <= MAX_SESSION_CHARS ? key : key.slice(key.length - MAX_SESSION_CHARS);
}

/** A tally behind what was summed of it already: an older copy (a peer's ConfigMap read out of order), not news. */
function behind(t: Counts, was: Counts): boolean {
  return t.evaluated < was.evaluated || t.matched < was.matched || t.flips < was.flips;
}

/**
 * The rule's status.shadow for `role` at `generation`, from what status recorded and the live
 * sessions' tallies. A different generation or role (or nothing recorded) starts again at zero: the
 * live tallies seen then are taken as the starting point, since a replica may still hold counts of
 * the spec before (it starts its tally again only when the new spec reaches its snapshot).
 */
export function mergeShadow(o: {
  readonly role: ShadowRole;
  readonly generation: number;
  readonly recorded: RuleShadowStatus | undefined;
  readonly live: readonly LiveTally[];
  readonly nowMs: number;
}): RuleShadowStatus {
  const { role, generation, recorded, nowMs } = o;
  const fresh = recorded === undefined || recorded.role !== role || recorded.observedGeneration !== generation;
  const sinceMs = fresh ? nowMs : (msOf(recorded.since) ?? nowMs);
  const total: Counts = fresh ? { ...ZERO } : { evaluated: recorded.evaluated, matched: recorded.matched, flips: recorded.flips };
  const entries = new Map<string, Entry>(fresh ? [] : (recorded.replicas ?? []).map((e) => [e.session, e]));
  let first = fresh ? undefined : msOf(recorded.firstTime);
  let last = fresh ? undefined : msOf(recorded.lastTime);
  let lastFlip = fresh ? undefined : msOf(recorded.lastFlipTime);
  const examples: ShadowExample[] = fresh ? [] : [...(recorded.examples ?? [])];
  const live = new Set<string>();
  // Room for sessions not listed yet: those listed and live keep theirs, and one past the bound waits
  // (counted once there is room) rather than be summed without being listed, to be summed again.
  let room = MAX_SESSIONS - countListedLive(o.live, role, entries);
  for (const l of o.live) {
    const { tally } = l;
    const session = sessionKey(l);
    if (tally.role !== role || tally.evaluated === 0 || live.has(session)) continue;
    const listed = entries.get(session);
    if (listed === undefined && room-- <= 0) continue;
    live.add(session);
    if (listed !== undefined && behind(tally, listed)) continue;
    // At a start, what a session holds already belongs to what came before.
    const was: Counts = fresh ? tally : (listed ?? ZERO);
    const added = { evaluated: tally.evaluated - was.evaluated, matched: tally.matched - was.matched, flips: tally.flips - was.flips };
    total.evaluated += added.evaluated;
    total.matched += added.matched;
    total.flips += added.flips;
    entries.set(session, { session, evaluated: tally.evaluated, matched: tally.matched, flips: tally.flips });
    if (added.evaluated > 0) {
      first = earliest(first, tally.firstMs === undefined ? undefined : Math.max(tally.firstMs, sinceMs));
      last = latest(last, tally.lastMs);
    }
    if (added.flips > 0) {
      lastFlip = latest(lastFlip, tally.lastFlipMs);
      examples.push(...tally.examples.filter((e) => Date.parse(e.time) >= sinceMs));
    }
  }
  return {
    role,
    summary: shadowSummary(role, total.flips, total.evaluated),
    observedGeneration: generation,
    since: iso(sinceMs),
    ...total,
    ...(first === undefined ? {} : { firstTime: iso(first) }),
    ...(last === undefined ? {} : { lastTime: iso(last) }),
    ...(lastFlip === undefined ? {} : { lastFlipTime: iso(lastFlip) }),
    ...optional('examples', firstExamples(examples)),
    ...optional('replicas', bounded([...entries.values()], live)),
  };
}

/** How many of the live sessions are listed already (each once). */
function countListedLive(live: readonly LiveTally[], role: ShadowRole, entries: ReadonlyMap<string, Entry>): number {
  const listed = new Set<string>();
  for (const l of live) {
    const session = sessionKey(l);
    if (l.tally.role === role && l.tally.evaluated > 0 && entries.has(session)) listed.add(session);
  }
  return listed.size;
}

function optional<K extends string, T>(key: K, list: readonly T[]): { [k in K]?: T[] } {
  return (list.length === 0 ? {} : { [key]: [...list] }) as { [k in K]?: T[] };
}

/** The first SHADOW_EXAMPLES by time, each once. */
function firstExamples(all: readonly ShadowExample[]): ShadowExample[] {
  const seen = new Set<string>();
  const unique = all.filter((e) => {
    const k = `${e.time}\n${e.input}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  return unique.sort((a, b) => Date.parse(a.time) - Date.parse(b.time)).slice(0, SHADOW_EXAMPLES);
}

/** At most MAX_SESSIONS entries: live sessions are kept, those no longer live leave first (oldest listed first). */
function bounded(entries: Entry[], live: ReadonlySet<string>): Entry[] {
  let over = entries.length - MAX_SESSIONS;
  if (over <= 0) return entries;
  const kept = entries.filter((e) => live.has(e.session) || over-- <= 0);
  return kept.slice(0, MAX_SESSIONS);
}
