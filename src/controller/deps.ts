// What a reconcile is given (the ports, the store's draft, the clock) and what it answers.
import type { SigningHolder } from './signing.ts';
import type { Logger } from 'pino';
import type { BundleStatus, ConnectorStatus, DirectoryStatus, RuleShadowStatus, RuleStatus } from '../api/index.ts';
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
  /**
   * The shadow counts of Proposed rules and rules marked for removal, summed over the replicas
   * serving (docs/rules.md, "Shadow decisions"); absent: none are counted (offline commands).
   */
  readonly shadow?: ShadowView;
}

/** What a Rule's status shows of its shadow decisions (issue 28). */
export interface ShadowView {
  /**
   * status.shadow for a rule with this role at this generation, made from the recorded status (the
   * counts of replica sessions that ended are kept there) and every serving replica's counts;
   * undefined: the rule is neither Proposed nor marked for removal.
   */
  statusOf(
    tenant: string,
    rule: string,
    role: 'Proposed' | 'Removal' | undefined,
    generation: number,
    recorded: RuleShadowStatus | undefined,
  ): RuleShadowStatus | undefined;
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
