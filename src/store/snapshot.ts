// The state HTTP handlers read: one immutable Snapshot, replaced whole on every publish.
import type { BuiltBundle } from '../bundle/index.ts';
import type { EntityDirectory, RegoVersion, RuleIndex, RuleModel, ShadowSet } from '../policy/index.ts';

/** A connector as the bundle route needs it. */
export interface ConnectorEntry {
  readonly tenant: string;
  readonly name: string;
  /** Active serves bundles; Inactive answers 403 to a valid token. */
  readonly active: boolean;
  /** SHA-256 (hex) of the current token; undefined while revoked. */
  readonly tokenHash: string | undefined;
}

/** A built bundle as it is served. */
export interface BundleEntry {
  readonly tenant: string;
  readonly name: string;
  readonly connector: string;
  readonly built: BuiltBundle;
  readonly ruleCount: number;
  /** What it was built from: the selected rules (as stored), the Rego version, entityTypes (JSON) and the tenant's directory. */
  readonly source: {
    readonly rules: readonly RuleModel[];
    readonly regoVersion: RegoVersion;
    readonly entityTypes: string;
    readonly directory: EntityDirectory;
  };
}

/** Everything one tenant serves. */
export interface TenantSnapshot {
  readonly tenant: string;
  readonly index: RuleIndex;
  readonly connectors: ReadonlyMap<string, ConnectorEntry>;
  readonly bundles: ReadonlyMap<string, BundleEntry>;
  /** Entities whose properties decisions merge under the request's (Directory resources). */
  readonly directory: EntityDirectory;
  /** The tenant's proposal (Proposed rules, rules marked for removal); undefined when it has none, so a decision pays nothing. */
  readonly shadow?: ShadowSet | undefined;
}

/** Who an API key belongs to. */
export interface ApiKeyEntry {
  readonly tenant: string;
  /** Name of the Secret that holds it. */
  readonly secret: string;
}

export interface Snapshot {
  /** Increases with every publish. */
  readonly version: number;
  readonly tenants: ReadonlyMap<string, TenantSnapshot>;
  /** API keys by SHA-256 (hex) of the key. */
  readonly apiKeys: ReadonlyMap<string, ApiKeyEntry>;
  /** Connectors by SHA-256 (hex) of their current token. */
  readonly tokens: ReadonlyMap<string, ConnectorEntry>;
  /**
   * Connectors by the hashes of their last few earlier tokens (rotated or revoked): never a key to
   * anything, only a way to recognise (and report) a sidecar that still presents one.
   */
  readonly retiredTokens: ReadonlyMap<string, ConnectorEntry>;
}

/** `<tenant>/<bundle>`: the key of a bundle in change events and activity logs. */
export function bundleKey(tenant: string, bundle: string): string {
  return `${tenant}/${bundle}`;
}
