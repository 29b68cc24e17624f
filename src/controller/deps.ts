// What a reconcile is given (the ports, the store's draft, the clock) and what it answers.
import type { SigningHolder } from './signing.ts';
import type { Logger } from 'pino';
import type { BundleStatus, ConnectorStatus, DirectoryStatus, RuleStatus } from '../api/index.ts';
import type { BundlePacker } from '../bundle/index.ts';
import type { Slicer } from '../work/index.ts';
import type { Agent, AgentSummary } from '../fleet/index.ts';
import type { ActivityLog, StoreDraft } from '../store/index.ts';
import type { ClusterWriter, ObjectKey, ObjectReader } from './types.ts';

export interface ReconcileDeps {
  readonly objects: ObjectReader;
  readonly writer: ClusterWriter;
  readonly draft: StoreDraft;
  readonly activity: ActivityLog;
  readonly now: () => Date;
  readonly random?: (size: number) => Uint8Array;
  readonly log: Logger;
  /**
   * Whether this replica writes (Secrets, status). A follower never issues tokens or invents bundle
   * revisions: it serves what the leader recorded, so every replica serves the same bytes.
   */
  readonly leading: () => boolean;
  /** The OPA agents of each bundle. */
  readonly agents: AgentView;
  /** Hashes and packs bundles (in a background thread when the service runs). */
  readonly packer: BundlePacker;
  /** The keys bundles are signed with, as the mode's source holds them (controller/signing.ts). */
  readonly signing: SigningHolder;
  /** Gives the event loop back between slices of long work (translation, index). */
  readonly slicer: Slicer;
}

/** What the controller reads of the OPA agents: a bundle's agents against the revision it serves. */
export interface AgentView {
  /** Agents silent for longer than this are not counted. */
  readonly windowSeconds: number;
  summary(tenant: string, bundle: string, revision: number | undefined, nowMs: number): AgentSummary;
  /** A bundle's agents (KeyRotated names the key each one verifies with). */
  agents(tenant: string, bundle: string, nowMs: number): readonly Agent[];
}

/** A status one of the controllers writes, typed by its kind's schema in api/. */
export type ObjectStatus = RuleStatus | ConnectorStatus | BundleStatus | DirectoryStatus;

/** What one reconcile decided: the status to write (after publish) and keys to look at next. */
export interface Outcome {
  readonly status?: ObjectStatus;
  /** For the rules-by-phase metric. */
  readonly phase?: NonNullable<ObjectStatus['phase']>;
  /** A tenant whose deployed rules or entity directory changed: its bundles must be rebuilt in this drain. */
  readonly rebuildIn?: string;
  readonly enqueue?: readonly ObjectKey[];
}
