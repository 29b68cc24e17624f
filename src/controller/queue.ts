// The work queue, made before the controller that drains it: sources, the fleet and the Lease all
// enqueue into it, so a mode can create them in the order they depend on each other and hand the
// queue to the controller last (the workqueue of client-go and kubebuilder). Keys collapse: a key
// already waiting is not added twice.
import { keyText, type ObjectKey } from './types.ts';

export interface WorkQueue {
  /** Adds a key (collapsing with the same key waiting) and wakes the controller draining the queue. */
  enqueue(key: ObjectKey): void;
}

/** The controller's side of a queue (controller.ts). */
export interface DrainedQueue extends WorkQueue {
  /** The keys waiting, as keyText. */
  readonly keys: Set<string>;
  /** Adds a key by its text (a retry). */
  add(text: string): void;
  /** Called on every add from now on, and at once when keys are waiting already. */
  onAdd(wake: () => void): void;
}

/** An empty queue; keys wait until a controller drains it. */
export function createWorkQueue(): WorkQueue {
  return drainedQueue();
}

export function drainedQueue(): DrainedQueue {
  const keys = new Set<string>();
  let wake: (() => void) | undefined;
  const add = (text: string): void => {
    keys.add(text);
    wake?.();
  };
  return {
    keys,
    add,
    enqueue: (key) => add(keyText(key)),
    onAdd(w) {
      if (wake) throw new Error('a work queue is drained by one controller');
      wake = w;
      if (keys.size > 0) w();
    },
  };
}

/** The controller's side of a queue made by createWorkQueue. */
export function asDrained(queue: WorkQueue): DrainedQueue {
  if (!('keys' in queue && 'onAdd' in queue)) throw new Error('the work queue was not made by createWorkQueue');
  return queue as DrainedQueue;
}
