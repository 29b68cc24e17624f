// Rule status.shadow kept current (docs/rules.md, "Shadow decisions"): at most every 10 s, the rules
// whose shadow counts moved (here, or at a peer that shared them) are enqueued, and the leader's
// reconcile writes their status (only what differs). Also run by every activity flush, so a graceful
// stop writes the last counts before the next process (or the next leader) sums from them.
import type { ObjectKey } from '../controller/index.ts';
import { SHADOW_ENQUEUE_MS, type ShadowHub } from '../shadow/index.ts';

export interface ShadowStatus {
  /** Enqueues the rules whose counts moved since the last tick (leader), and shares this replica's (`shared`). */
  tick(): void;
  stop(): void;
}

export function startShadowStatus(o: {
  readonly view: Pick<ShadowHub, 'takeChanged'>;
  readonly enqueue: (key: ObjectKey) => void;
  readonly leading: () => boolean;
  /** This replica's own tallies moved (Kubernetes: publish them to the sharing ConfigMap). */
  readonly shared?: () => void;
  readonly everyMs?: number;
}): ShadowStatus {
  const tick = (): void => {
    const { rules, local } = o.view.takeChanged();
    if (local) o.shared?.();
    // A follower writes no status; a new leader's first pass reconciles every rule anyway.
    if (!o.leading()) return;
    for (const key of rules) {
      const slash = key.indexOf('/');
      o.enqueue({ kind: 'Rule', namespace: key.slice(0, slash), name: key.slice(slash + 1) });
    }
  };
  const timer = setInterval(tick, o.everyMs ?? SHADOW_ENQUEUE_MS);
  timer.unref();
  return { tick, stop: () => clearInterval(timer) };
}
