// The offline pipeline every command without a listener runs (render, lint, test, the console's
// playground through test's world): a manifests folder through the folder source, controller and
// store `serve` runs, with an in-memory state folder, so what it builds is what `serve` would serve,
// byte for byte.
import { pino, type Logger } from 'pino';
import {
  DEFAULT_MANIFEST_LIMITS,
  walkManifests,
  type DocumentProblem,
  type ManifestLimits,
  type ObjectState,
} from '../standalone/index.ts';
import { createStore, type Snapshot } from '../store/index.ts';
import { createMemoryFolder } from './memory-folder.ts';
import { createPipeline } from './pipeline.ts';

export interface OfflineOptions {
  /** Where the pipeline logs (default: nowhere; what a person must fix comes back in the result). */
  readonly log?: Logger;
  readonly now?: () => Date;
  /** Largest file and most documents per file (default: those of `serve`). */
  readonly limits?: ManifestLimits;
}

/** What `serve` would hold once it read the folder. */
export interface Offline {
  /** The YAML files read, in name order, as reached through the folder. */
  readonly files: readonly string[];
  /** What would be served: tenants, their rules, connectors, bundles (bytes and ETags) and directories. */
  readonly snapshot: Snapshot;
  /** Documents and files that could not be used (what `serve` writes to problems.yaml). */
  readonly problems: readonly DocumentProblem[];
  /** Every Rule, Connector, Bundle and Directory read, with its generation and the status the controllers wrote. */
  readonly objects: readonly ObjectState[];
}

/** The folder itself could not be read (it does not exist, or a path leads nowhere): nothing was built. */
export interface Unreadable {
  readonly unreadable: string;
}

/** Builds a manifests folder as `serve` would, in memory; resolves once every object is built and has its status. */
export async function buildOffline(manifestsDir: string, options: OfflineOptions = {}): Promise<Offline | Unreadable> {
  let files: string[];
  try {
    ({ files } = await walkManifests(manifestsDir));
  } catch (err) {
    return { unreadable: err instanceof Error ? err.message : String(err) };
  }
  const log = options.log ?? pino({ level: 'silent' });
  const now = options.now ?? (() => new Date());
  const state = createMemoryFolder();
  const store = createStore();
  const pipeline = createPipeline({
    dir: manifestsDir,
    state,
    log,
    now,
    limits: options.limits ?? DEFAULT_MANIFEST_LIMITS,
    // One read of files nobody is writing: each file's content is used as first read.
    settleMs: 0,
    // Nothing else waits on this event loop: threads would only add their start-up.
    inline: true,
    controller: { store, log: log.child({ module: 'controller' }), now },
  });
  try {
    await pipeline.start();
  } finally {
    pipeline.source.stop();
    pipeline.controller.stop();
    await pipeline.closeThreads();
  }
  return { files, snapshot: store.snapshot(), problems: pipeline.source.problems(), objects: state.objects() };
}
