import type { Logger } from 'pino';
import type { AgentRegistry, DecisionSink, RecentDecisions, UploadReader } from '../fleet/index.ts';
import type { Metrics } from '../metrics.ts';
import type { ShadowLedger } from '../shadow/index.ts';
import type { Store } from '../store/index.ts';
import type { AdmissionDeps } from './admission.ts';
import type { LongPolls } from './longpoll.ts';

export interface ApiDeps {
  readonly store: Store;
  readonly longPolls: LongPolls;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** Milliseconds since the epoch (decision timestamps, activity records). */
  readonly now: () => number;
  /** Largest request body accepted (413 beyond). */
  readonly maxBodyBytes: number;
  /** Longest a bundle request is held for `Prefer: wait=N`. */
  readonly maxWaitSeconds: number;
  /**
   * The public base URL of the API (https://host[:port], no trailing slash): the AuthZEN PDP
   * identifier, and the base of every endpoint the metadata document names.
   */
  readonly publicUrl: () => string;
  readonly fleet: FleetDeps;
  /** The validating admission webhook (Kubernetes mode); without it the route is not served. */
  readonly admission?: AdmissionDeps;
  /** Counts the shadow decisions of tenants with a proposal (one ledger per process); absent: none are counted. */
  readonly shadow?: ShadowLedger;
}

/** What OPA agents report, and where decisions are written. */
export interface FleetDeps {
  readonly agents: AgentRegistry;
  readonly recent: RecentDecisions;
  /** The decision log (--decision-log); the service's own decisions go there too. */
  readonly sink: DecisionSink;
  /** Largest status report or decision-log upload, received and decompressed (413 beyond). */
  readonly maxUploadBytes: number;
  /** Reads uploads off the event loop (the uploads thread). */
  readonly uploads: UploadReader;
}
