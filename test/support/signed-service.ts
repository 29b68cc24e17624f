// The service's HTTP side (the real API handler, store, long polls, metrics) over the controller
// tests' fake source, with a SigningHolder the test sets: bundles served signed before a mode wires
// its key source (Kubernetes Secret, state folder) into it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { configFromFlags } from '../../src/config.ts';
import {
  createController,
  createSigningHolder,
  type Controller,
  type SigningHolder,
  type SigningState,
  type SourceObject,
} from '../../src/controller/index.ts';
import { controllerBase, createBase, startBaseHttp } from '../../src/modes/core.ts';
import type { Store } from '../../src/store/index.ts';
import { fakeSource, type FakeSource } from './controller.ts';
import { LOCAL_LISTENERS } from './service.ts';

export interface SignedService {
  readonly url: string;
  readonly source: FakeSource;
  readonly store: Store;
  readonly holder: SigningHolder;
  readonly controller: Controller;
  /** The current token of a connector (issued by the controller into the fake source). */
  token(tenant: string, connector: string): string;
  /** Bundle requests held now (long polls). */
  heldPolls(): number;
  /** Reconciles every object and waits until the controller is idle. */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export async function startSignedService(objects: readonly SourceObject[], state: SigningState): Promise<SignedService> {
  const stateDir = await mkdtemp(join(tmpdir(), 'acl-signed-service-'));
  const config = { ...configFromFlags([...LOCAL_LISTENERS, '--log-level', 'silent', '--state-dir', stateDir]), maxLongPollSeconds: 30 };
  const base = createBase(config, { log: pino({ level: 'silent' }) }, 'starting');
  const source = fakeSource(objects);
  const holder = createSigningHolder(state);
  const controller = createController({ ...controllerBase(base, {}), objects: source.reader, writer: source.writer, signing: holder });
  const serving = await startBaseHttp(base);
  const api = await serving.listenApi({ mode: 'insecure' });
  base.readiness.serving();
  return {
    url: api.url.replace('localhost', '127.0.0.1'),
    source,
    store: base.store,
    holder,
    controller,
    token(tenant, connector) {
      const token = source.secrets.get(`${tenant}/${connector}`)?.token;
      if (token === undefined) throw new Error(`connector ${tenant}/${connector} has no token yet`);
      return token;
    },
    heldPolls: () => serving.longPolls.size(),
    async drain() {
      for (const k of source.keys()) controller.enqueue(k);
      await controller.idle();
    },
    async stop() {
      controller.stop();
      await serving.closeApi();
      await serving.closeOps();
      await base.fleet.stop();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}
