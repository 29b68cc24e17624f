// The Verify Panel's Replay (docs/console.md, "Replay"): the recent decisions OPA reported for the
// bundles that would carry a rule, decided again with the rule's condition replaced by an edit (the
// rule taken as Enforced), as an OPA on each of those bundles would decide them. Pure: the caller
// hands in what the fleet holds (at most RecentDecisions' capacity per bundle) and nothing is saved.
import { z } from 'zod';
import { loggedInputOf } from '../authzen/index.ts';
import { entityTypesTake } from '../bundle/index.ts';
import type { RecentDecision } from '../fleet/index.ts';
import {
  buildIndexSteps,
  type CompiledRule,
  compileRule,
  decide,
  type DecisionInput,
  EMPTY_DIRECTORY,
  parseExactJson,
  type RuleIndex,
  type RuleModel,
} from '../policy/index.ts';
import type { BundleEntry } from '../store/index.ts';
import type { TenantServed } from './playground.ts';

/** Why a recent decision was not replayed. */
export type RecentCause = 'not-a-decision' | 'not-kept' | 'refused-input';
export const RECENT_CAUSES: readonly RecentCause[] = ['not-a-decision', 'not-kept', 'refused-input'];

export type Direction = 'allow-to-deny' | 'deny-to-allow';

/** A recent decision the edit would decide the other way. */
export interface RecentFlip {
  readonly bundle: string;
  /** When OPA decided (ISO 8601), which agent, on which revision. */
  readonly time: string;
  readonly agent: string;
  readonly revision: string | undefined;
  readonly change: Direction;
  /** The rule that allowed before, when known: OPA's log names none, so only when the rules in force now allow it too. */
  readonly ruleBefore: string | undefined;
  /** The rule that allows with the edit (undefined: deny). */
  readonly ruleAfter: string | undefined;
  /** The rules in force now already decide it the new way: the flip is not this edit's alone (the rules changed since OPA decided). */
  readonly already: boolean;
  /** Who asked what, in a line: `user alice read document d1`. */
  readonly request: string;
  /** The input as the fleet holds it (credentials redacted), as indented JSON text. */
  readonly input: string;
}

export interface BundleReplayed {
  readonly name: string;
  /** Recent decisions held for it (at most the fleet's capacity per bundle). */
  readonly held: number;
}

export interface RecentReplay {
  /** The bundles whose entityTypes filter takes the rule, by name. */
  readonly bundles: readonly BundleReplayed[];
  readonly replayed: number;
  readonly unchanged: number;
  readonly allowToDeny: number;
  readonly denyToAllow: number;
  /** Newest first within a bundle, bundles by name. */
  readonly flips: readonly RecentFlip[];
  readonly unreplayable: Readonly<Record<RecentCause, number>>;
  /** The first reason met of each cause, in a sentence. */
  readonly why: Readonly<Partial<Record<RecentCause, string>>>;
}

const EntityTypes = z.array(z.string());

function typesOf(bundle: BundleEntry): ReadonlySet<string> {
  const parsed = EntityTypes.safeParse(JSON.parse(bundle.source.entityTypes));
  return new Set(parsed.success ? parsed.data : []);
}

/** The tenant's bundles whose entityTypes filter takes a rule of these types (were it Enforced, they would carry it), by name. */
export function bundlesSelecting(served: TenantServed | undefined, rule: Pick<RuleModel, 'subjectType' | 'resourceType'>): BundleEntry[] {
  return [...(served?.bundles.values() ?? [])]
    .filter((b) => entityTypesTake(typesOf(b), rule.subjectType, rule.resourceType))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

const NOT_KEPT = '[not kept here';

/**
 * A logged input (OPA's `{principal, action, resource, context, actionProperties}`) checked as
 * `acl-operator replay` checks one (authzen's loggedInputOf: exactly as POST /authorization checks
 * the request it came from), its numbers read exactly as the API reads a body. A message when the
 * API would refuse it. One check for both: an action logged as an object, which the OPA compared
 * as such (and so denied), is refused here as the CLI refuses it, never decided as its name.
 */
export function loggedInput(logged: unknown): { ok: true; input: DecisionInput } | { ok: false; message: string } {
  const exact = parseExactJson(JSON.stringify(logged) ?? 'null');
  if (!exact.ok) return { ok: false, message: exact.message };
  return loggedInputOf(exact.value);
}

/** The index an OPA on `bundle` would decide with: the tenant's rules its filter takes, `edited` (as Enforced) in place of its namesake. */
function indexFor(
  tenant: string,
  rules: readonly CompiledRule[],
  types: ReadonlySet<string>,
  edited?: CompiledRule,
): Generator<void, RuleIndex> {
  const taken = rules.filter((r) => entityTypesTake(types, r.model.subjectType, r.model.resourceType));
  if (edited === undefined) return buildIndexSteps(tenant, taken);
  return buildIndexSteps(tenant, [...taken.filter((r) => r.model.name !== edited.model.name), edited]);
}

/** Decisions replayed between two steps (a caller's slicer may give the event loop back there). */
const PER_STEP = 25;

/** A request in a line, for a table row to be scanned by eye. */
function requestLine(input: DecisionInput): string {
  const { principal, resource } = input;
  return `${String(principal['type'])} ${String(principal['id'])} ${input.action} ${String(resource['type'])} ${String(resource['id'])}`;
}

export interface ReplayRecentOptions {
  readonly tenant: string;
  readonly served: TenantServed | undefined;
  /** The rule with its condition edited (any state: it is replayed as Enforced). */
  readonly edited: RuleModel;
  /** The fleet's recent decisions of a bundle, newest first, credentials redacted. */
  readonly recent: (bundle: string) => readonly RecentDecision[];
}

/**
 * Replays the recent decisions of every bundle that would carry the edited rule; each is replayed,
 * unreplayable by a cause, never dropped. As steps: a large tenant's indexes are built, and its
 * decisions replayed, a slice at a time (work/drive), so the event loop keeps answering decisions.
 */
export function* replayRecentSteps(o: ReplayRecentOptions): Generator<void, RecentReplay> {
  const rules = o.served?.index.rules ?? [];
  const directory = o.served?.directory ?? EMPTY_DIRECTORY;
  const edited = compileRule({ ...o.edited, state: 'Enforced' });
  const unreplayable: Record<RecentCause, number> = { 'not-a-decision': 0, 'not-kept': 0, 'refused-input': 0 };
  const why: Partial<Record<RecentCause, string>> = {};
  const skip = (cause: RecentCause, detail: string): void => {
    unreplayable[cause]++;
    why[cause] ??= detail;
  };
  const flips: RecentFlip[] = [];
  const bundles: BundleReplayed[] = [];
  const indexes = new Map<string, { readonly now: RuleIndex; readonly next: RuleIndex }>();
  let replayed = 0;
  let allowToDeny = 0;
  let denyToAllow = 0;
  for (const bundle of bundlesSelecting(o.served, o.edited)) {
    const held = o.recent(`${o.tenant}/${bundle.name}`);
    bundles.push({ name: bundle.name, held: held.length });
    if (held.length === 0) continue;
    // Bundles with the same filter decide with the same rules: their indexes are built once.
    let pair = indexes.get(bundle.source.entityTypes);
    if (pair === undefined) {
      const types = typesOf(bundle);
      pair = { now: yield* indexFor(o.tenant, rules, types), next: yield* indexFor(o.tenant, rules, types, edited) };
      indexes.set(bundle.source.entityTypes, pair);
    }
    const { now, next } = pair;
    let i = 0;
    for (const d of held) {
      if (++i % PER_STEP === 0) yield;
      if (d.decision !== 'allow' && d.decision !== 'deny') {
        skip('not-a-decision', `OPA's result was ${d.decision} (query ${d.path ?? 'unknown'}), not allow or deny.`);
        continue;
      }
      if (typeof d.input === 'string' && d.input.startsWith(NOT_KEPT)) {
        skip('not-kept', d.input);
        continue;
      }
      const read = loggedInput(d.input);
      if (!read.ok) {
        skip('refused-input', `The API would refuse it: ${read.message}.`);
        continue;
      }
      replayed++;
      const before = d.decision === 'allow';
      const after = decide(next, read.input, directory);
      if (after.allow === before) continue;
      const inForce = decide(now, read.input, directory);
      const change: Direction = before ? 'allow-to-deny' : 'deny-to-allow';
      if (before) allowToDeny++;
      else denyToAllow++;
      flips.push({
        bundle: bundle.name,
        time: d.time,
        agent: d.agent,
        revision: d.revision,
        change,
        ruleBefore: before && inForce.allow ? inForce.rule?.model.name : undefined,
        ruleAfter: after.rule?.model.name,
        already: inForce.allow === after.allow,
        request: requestLine(read.input),
        input: JSON.stringify(d.input, null, 2),
      });
    }
  }
  return {
    bundles,
    replayed,
    unchanged: replayed - allowToDeny - denyToAllow,
    allowToDeny,
    denyToAllow,
    flips,
    unreplayable,
    why,
  };
}
