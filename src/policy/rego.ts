// Rego translator: the whole `policy.rego` module assembled in a fixed order: the package and the
// default deny, one clause per rule in name order (regorule.ts), the directory section
// (regodirectory.ts) and the prelude functions the clauses use (prelude.ts).
import { runSteps } from './steps.ts';
import type { RuleModel } from './model.ts';
import { EMPTY_DIRECTORY, type EntityDirectory } from './directory.ts';
import { preludeText, type PreludeName } from './prelude.ts';
import { directorySection } from './regodirectory.ts';
import { translateRule, type RuleRego } from './regorule.ts';
import { commentLines, type RegoVersion } from './regotext.ts';

export interface TranslateOptions {
  readonly regoVersion: RegoVersion;
  /** Comment lines put at the top of the file (sanitized like every other comment). */
  readonly header?: readonly string[];
  /** The tenant's entity directory: the part the rules read is embedded (directory.ts). */
  readonly directory?: EntityDirectory;
}

/**
 * Each rule's translations: one weak map per `<regoVersion>|<merged>` (four at most), by rule (rule
 * models are immutable), so a rule costs one entry per translation and no holder object.
 */
const TRANSLATED = new Map<string, WeakMap<RuleModel, RuleRego>>();

/**
 * The translation of one rule, made once per rule model and options and then shared: the
 * controller's status and every bundle that embeds the rule hold the same text.
 */
export function ruleTranslation(rule: RuleModel, v: RegoVersion, merged: boolean): RuleRego {
  const key = `${v}|${merged}`;
  let byRule = TRANSLATED.get(key);
  if (!byRule) {
    byRule = new WeakMap();
    TRANSLATED.set(key, byRule);
  }
  let t = byRule.get(rule);
  if (!t) {
    // Frozen: every holder shares this one object.
    t = Object.freeze(translateRule(rule, v, merged));
    byRule.set(rule, t);
  }
  return t;
}

/**
 * The whole `policy.rego` as steps (each a rule or a slice of the directory) a caller may spread
 * over several turns of the event loop; translate() runs them at once. Rules already translated
 * (the same rule object, with the same options) are not translated again.
 */
export function* translateSteps(rules: readonly RuleModel[], options: TranslateOptions): Generator<void, string> {
  return (yield* translatePartsSteps(rules, options)).join('');
}

/**
 * `policy.rego` as parts whose concatenation is the file (translateSteps joins them): a caller that
 * sends the text elsewhere (the packing thread) never makes one large string on this thread.
 */
export function* translatePartsSteps(rules: readonly RuleModel[], options: TranslateOptions): Generator<void, string[]> {
  const v = options.regoVersion;
  const byName = (a: RuleModel, b: RuleModel): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  // Callers usually pass rules already in name order (the store keeps them so): not sorted again.
  const sorted = rules.every((r, i) => i === 0 || byName(rules[i - 1] as RuleModel, r) < 0) ? rules : [...rules].sort(byName);
  yield;
  const directory = yield* directorySection(sorted, options.directory ?? EMPTY_DIRECTORY, v);
  const used = new Set<PreludeName>();
  const clauses: string[] = [];
  const groups: string[] = [];
  for (const r of sorted) {
    const t = ruleTranslation(r, v, directory.length > 0);
    for (const n of t.prelude) used.add(n);
    clauses.push(t.text);
    if (clauses.length === 256) {
      groups.push(`${clauses.join('\n\n')}\n\n`);
      clauses.length = 0;
      yield;
    }
  }
  if (clauses.length > 0) groups.push(`${clauses.join('\n\n')}\n\n`);
  const header = (options.header ?? []).flatMap(commentLines);
  const parts: string[] = [
    `${[...header, 'package acl', ...(v === 1 ? ['', 'import rego.v1'] : [])].join('\n')}\n\n`,
    `default allow ${v === 1 ? ':=' : '='} false\n\n`,
    ...groups,
  ];
  for (const section of directory) parts.push(...section, '\n\n');
  const prelude = preludeText(used, v);
  if (prelude.length > 0) parts.push(prelude.join('\n\n'));
  // The sections are joined by blank lines and the file ends with one newline.
  const last = parts.length - 1;
  if (prelude.length === 0) parts[last] = (parts[last] as string).replace(/\n\n$/, '');
  parts.push('\n');
  return parts;
}

/** The whole `policy.rego` for a set of rules: package acl, default deny, one clause per rule sorted by name. */
export function translate(rules: readonly RuleModel[], options: TranslateOptions): string {
  return runSteps(translateSteps(rules, options));
}
