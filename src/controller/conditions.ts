// Status conditions: how a reconcile's judgements become Kubernetes conditions, and when a
// transition is worth a Warning event.
import type { Condition } from '../api/index.ts';
import { canonicalJson } from '../bundle/index.ts';
import type { ReconcileDeps } from './deps.ts';
import type { SourceObject } from './types.ts';

export interface ConditionInput {
  readonly type: string;
  /** True, False, or Unknown (nothing to judge by yet, as RolledOut with no agents). */
  readonly status: boolean | 'Unknown';
  readonly reason: string;
  readonly message: string;
}

/**
 * Kubernetes-style conditions: lastTransitionTime moves only when a condition's status changes, so
 * recomputing the same outcome gives the same status (and no write).
 */
export function conditionsFor(
  inputs: readonly ConditionInput[],
  generation: number,
  now: Date,
  previous: readonly Condition[] | undefined,
): Condition[] {
  return inputs.map((c) => {
    const status = c.status === 'Unknown' ? 'Unknown' : c.status ? 'True' : 'False';
    const old = previous?.find((p) => p.type === c.type);
    return {
      type: c.type,
      status,
      reason: c.reason,
      message: c.message,
      observedGeneration: generation,
      lastTransitionTime: old && old.status === status && old.lastTransitionTime ? old.lastTransitionTime : kubeTime(now),
    };
  });
}

/** The Ready condition among those a status recorded, if any. */
export function readyIn(previous: readonly Condition[] | undefined): Condition | undefined {
  return previous?.find((c) => c.type === 'Ready');
}

/**
 * Records a Warning event when the leader sees a problem the recorded Ready condition does not
 * already state: once per transition, however often the same object is reconciled.
 */
export function warnOnce(
  deps: ReconcileDeps,
  obj: SourceObject,
  previous: readonly Condition[] | undefined,
  reason: string,
  message: string,
): void {
  const was = readyIn(previous);
  if (deps.leading() && (was?.reason !== reason || was.message !== message))
    deps.writer.recordEvent?.(obj, { type: 'Warning', reason, message });
}

/** Whether two statuses say the same thing (key order and undefined fields aside). */
export function sameStatus(a: unknown, b: unknown): boolean {
  return canonicalJson(a ?? {}) === canonicalJson(b ?? {});
}

/** Kubernetes timestamps: RFC 3339 in whole seconds. */
export function kubeTime(now: Date): string {
  const second = Math.floor(now.getTime() / 1000);
  if (lastTime?.second !== second) lastTime = { second, text: now.toISOString().replace(/\.\d{3}Z$/, 'Z') };
  return lastTime.text;
}

/**
 * The last time kubeTime wrote: the thousands of conditions a start writes within one second share
 * one string rather than holding a copy each for as long as their status lives.
 */
let lastTime: { readonly second: number; readonly text: string } | undefined;
