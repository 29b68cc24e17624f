// The folder pipeline that `serve` and every offline command run: manifests folder → folder source
// (files read and parsed in a background thread) → controller (bundles packed in another) → store,
// with a state folder on disk or in memory. One reader and one selection for every front end.
import type { Logger } from 'pino';
import { createController, type Controller, type ControllerOptions } from '../controller/index.ts';
import {
  createFolderSource,
  createThreadReader,
  type FolderSource,
  type FolderSourceOptions,
  type ManifestLimits,
  type StateFolder,
} from '../standalone/index.ts';
import { createThreadPacker } from '../work/packer.ts';
import { countingWriter } from './console.ts';
import { createInlineThread } from '../work/inline.ts';
import { createWorkerThread } from '../work/pool.ts';

export interface PipelineOptions {
  readonly dir: string;
  readonly state: StateFolder;
  readonly log: Logger;
  readonly now: () => Date;
  readonly limits: ManifestLimits;
  /** How long a file's new content must hold still before it is used (0: at once). */
  readonly settleMs: number;
  /** Source timings the tests shorten. */
  readonly timings?: Pick<FolderSourceOptions, 'debounceMs' | 'confirmDeleteMs' | 'racyWindowMs' | 'rescanMs'>;
  /** Read and pack on this thread rather than two background threads (a command that builds once and exits). */
  readonly inline?: boolean;
  /** The controller's options (store, log, clock, metrics, agents, randomness); its packer is this pipeline's. */
  readonly controller: Omit<ControllerOptions, 'objects' | 'writer' | 'packer'>;
  /** Called after each status or token Secret write, with its tenant (the console's live updates follow them). */
  readonly onStatusWrite?: (tenant: string) => void;
}

export interface Pipeline {
  readonly source: FolderSource;
  readonly controller: Controller;
  /** Reads the folder, then resolves once everything read is built, published and its status written. */
  start(): Promise<void>;
  /** Stops the reading and packing threads. */
  closeThreads(): Promise<void>;
}

/** Wires source and controller; nothing is read until start(). */
export function createPipeline(o: PipelineOptions): Pipeline {
  // Reading and parsing manifests, and hashing and packing bundles, run in two background threads:
  // the event loop that answers decisions and bundle polls never holds a large file or a gzip.
  const readingThread = o.inline ? createInlineThread() : createWorkerThread('acl-manifests');
  const packingThread = o.inline ? createInlineThread() : createWorkerThread('acl-bundles');
  let controller: Controller | undefined;
  const source = createFolderSource({
    dir: o.dir,
    state: o.state,
    log: o.log.child({ module: 'standalone' }),
    enqueue: (key) => controller?.enqueue(key),
    reader: createThreadReader(readingThread, o.limits),
    settleMs: o.settleMs,
    clock: () => o.now().getTime(),
    ...o.timings,
  });
  const created = createController({
    ...o.controller,
    objects: source,
    writer: o.onStatusWrite ? countingWriter(source.writer, o.onStatusWrite) : source.writer,
    packer: createThreadPacker(packingThread),
  });
  controller = created;
  return {
    source,
    controller: created,
    async start() {
      await source.start();
      await created.idle();
    },
    async closeThreads() {
      await Promise.all([readingThread.close(), packingThread.close()]);
    },
  };
}
