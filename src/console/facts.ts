// Small renderings every page shares: a phase as a badge, an object's problem (a Ready condition that
// is not True) and its lint finding (the Warning condition), a GitOps banner. Pure.
import type { Condition } from '../api/index.ts';
import type { SourceObject } from '../controller/index.ts';
import { type Html, html } from './html.ts';
import { badge, notice } from './layout.ts';
import { gitOpsOwner } from './view.ts';

const GOOD = new Set(['Enforced', 'Active', 'Ready', 'Current']);
const BAD = new Set(['Invalid', 'Conflict', 'Error']);
const WAIT = new Set(['Pending', 'Approved', 'Stale', 'Inactive']);

export function phaseBadge(phase: string | undefined): Html {
  if (phase === undefined) return badge('Unknown', 'muted');
  return badge(phase === 'Stale' ? 'STALE' : phase, GOOD.has(phase) ? 'ok' : BAD.has(phase) ? 'bad' : WAIT.has(phase) ? 'warn' : 'muted');
}

export function conditionOf(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Why an object is not serving as asked: its Ready condition when not True. */
export function problemOf(conditions: readonly Condition[] | undefined): Condition | undefined {
  const ready = conditionOf(conditions, 'Ready');
  return ready && ready.status !== 'True' ? ready : undefined;
}

/** The lint finding on an object: the Warning condition when True. */
export function warningOf(conditions: readonly Condition[] | undefined): Condition | undefined {
  const w = conditionOf(conditions, 'Warning');
  return w && w.status === 'True' ? w : undefined;
}

/** Says that a GitOps tool owns the object and would put back a change made here. */
export function gitOpsBanner(obj: SourceObject, mode: 'kubernetes' | 'standalone'): Html {
  const owner = gitOpsOwner(obj);
  if (!owner || mode !== 'kubernetes') return html``;
  return notice(
    'warn',
    html`<strong>Managed by ${owner.tool}</strong> (<code>${owner.key}</code>): ${owner.tool} may revert a change made here on its next
      sync. Change it in Git to make it stick.`,
  );
}
