// The words every format of a replay report shares: numbers, directions, group names, and text made
// safe to print when it came from a log (a hostile input may carry terminal escapes or bidi overrides).
import type { Change, FlipGroup, ReplayReport } from './types.ts';

const NUMBER = new Intl.NumberFormat('en-US');

/** 12,345 */
export function n(value: number): string {
  return NUMBER.format(value);
}

/** `1 line`, `2 lines` */
export function count(value: number, word: string): string {
  return `${n(value)} ${word}${value === 1 ? '' : 's'}`;
}

/** allow → deny */
export function direction(change: Change): string {
  return change === 'allow-to-deny' ? 'allow → deny' : change === 'deny-to-allow' ? 'deny → allow' : 'unchanged';
}

/** C0 and C1 controls, and the bidi controls that could reorder what a terminal or a page shows. */
const UNSAFE = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/** Text from a log, one line, every control character shown as its \u escape. */
export function safe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`);
}

/** `acme` or `acme/bundle` */
export function targetName(tenant: string, bundle: string | null): string {
  return bundle === null ? tenant : `${tenant}/${bundle}`;
}

/** `rule a → none` */
export function rules(g: FlipGroup): string {
  return `rule ${g.ruleBefore ?? 'none'} → ${g.ruleAfter ?? 'none'}`;
}

/** `user read document` */
export function types(g: FlipGroup): string {
  return `${g.subjectType} ${g.action} ${g.resourceType}`;
}

/** Whether a group's flips count against the gate. */
export function counted(g: FlipGroup, r: ReplayReport): boolean {
  return !(g.change === 'deny-to-allow' && r.gate.allowDirection === 'deny-to-allow');
}

/** The gate's verdict in words. */
export function verdict(r: ReplayReport): string {
  const { gate } = r;
  const allowed = gate.allowDirection === 'deny-to-allow' ? ' (deny → allow not counted)' : '';
  const disagreeing = gate.disagreements > 0 ? `; OPA disagreed with the native replay on ${count(gate.disagreements, 'decision')}` : '';
  const flips = `${count(gate.flips, 'flip')} counted${allowed}, at most ${n(gate.maxFlips)} allowed${disagreeing}`;
  return gate.passed ? `passed: ${flips}` : `FAILED: ${flips}`;
}

/** Lines not replayed, over every cause. */
export function unreplayableTotal(r: ReplayReport): number {
  return Object.values(r.unreplayable).reduce((a, b) => a + b, 0);
}

/** One example's input as one line of JSON (a cut input is already its text). */
export function inputText(input: unknown): string {
  return typeof input === 'string' ? input : (JSON.stringify(input) ?? 'undefined');
}
