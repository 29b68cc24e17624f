// The folder pipeline that `serve` and every offline command run: manifests folder → folder source
// (files read and parsed in a background thread) → controller (bundles packed in another) → store,
// with a state folder on disk or in memory. One reader and one selection for every front end.
import type { Logger } from 'pino';
import { createPackingThread, createThreadPacker } from '../bundle/index.ts';
import { countingWriter, createController, createWorkQueue, type Controller, type ControllerOptions } from '../controller/index.ts';
import {
  createFolderSource,
  createReadingThread,
  createThreadReader,
  type FolderSource,
  type FolderSourceOptions,
  type ManifestLimits,
  type StateFolder,
} from '../standalone/index.ts';

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
  /** The controller's options (queue, store, log, clock, metrics, agents, randomness); its packer is this pipeline's. */
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
  const readingThread = createReadingThread(o.inline);
  const packingThread = createPackingThread(o.inline);
  const queue = o.controller.queue ?? createWorkQueue();
  const source = createFolderSource({
    dir: o.dir,
    state: o.state,
    log: o.log.child({ module: 'standalone' }),
    enqueue: queue.enqueue,
    reader: createThreadReader(readingThread, o.limits),
    settleMs: o.settleMs,
    clock: () => o.now().getTime(),
    ...o.timings,
  });
  const controller = createController({
    ...o.controller,
    queue,
    objects: source,
    writer: o.onStatusWrite ? countingWriter(source.writer, o.onStatusWrite) : source.writer,
    packer: createThreadPacker(packingThread),
  });
  return {
    source,
    controller,
    async start() {
      await source.start();
      await controller.idle();
    },
    async closeThreads() {
      await Promise.all([readingThread.close(), packingThread.close()]);
    },
  };
}
