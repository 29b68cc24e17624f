// The typed Config that readConfig returns, and its parts: what the rest of the service may know of
// its flags and environment.
import type { SinkTarget } from '../fleet/index.ts';

export interface Address {
  readonly host: string;
  readonly port: number;
}

/** --log-level's values, pino's levels. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/** --log-format's values: auto is pretty on a terminal, JSON otherwise (log.ts logFormatOf). */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

export type Tls =
  | { readonly mode: 'files'; readonly cert: string; readonly key: string }
  | { readonly mode: 'self-signed' }
  | { readonly mode: 'insecure' }
  /** Kubernetes mode: a TLS Secret in the operator's namespace, created when missing. */
  | { readonly mode: 'secret'; readonly name: string };

/** The Pod this replica runs in, as the Downward API tells it (POD_NAMESPACE, POD_NAME, POD_UID); empty outside a Pod. */
export interface PodIdentity {
  readonly namespace?: string;
  readonly name?: string;
  readonly uid?: string;
}

/** Settings of Kubernetes mode (no --manifests). */
export interface KubeSettings {
  readonly kubeconfig: string | undefined;
  /** undefined: every namespace. */
  readonly namespaces: readonly string[] | undefined;
  /** undefined: POD_NAMESPACE, then the service account's namespace file, then acl-system. */
  readonly operatorNamespace: string | undefined;
  readonly serviceName: string;
  /** The ValidatingWebhookConfiguration whose caBundle the leader keeps current; undefined: none. */
  readonly webhookConfiguration: string | undefined;
  readonly identity: string | undefined;
  readonly resyncSeconds: number;
  /** The Secret (operator's namespace) holding the bundle signing key (--signing-key-secret). */
  readonly signingKeySecret: string;
  readonly pod: PodIdentity;
  /**
   * KUBECONFIG as the environment has it. client-node reads the variable itself; this copy only lets
   * "no cluster configured" say whether it was set.
   */
  readonly kubeconfigVariable: string | undefined;
}

export interface FolderSettings {
  readonly settleMs: number;
  /** Seconds between reads of the folder when no change was seen (0: never). */
  readonly rescanSeconds: number;
  readonly maxManifestBytes: number;
  readonly maxManifestDocuments: number;
}

export interface Config {
  readonly manifests: string | undefined;
  readonly stateDir: string;
  readonly listen: Address;
  readonly opsListen: Address;
  /** The console's listener; undefined: no console. */
  readonly consoleListen: Address | undefined;
  /** The OPA binary the console's playground decides with too; undefined: none. */
  readonly opa: string | undefined;
  readonly tls: Tls;
  /** --public-url without a trailing slash, or undefined for the default. */
  readonly publicUrl: string | undefined;
  readonly maxBodyBytes: number;
  readonly maxLongPollSeconds: number;
  readonly logLevel: LogLevel;
  readonly logFormat: (typeof LOG_FORMATS)[number];
  /** Where decision lines go (--decision-log). */
  readonly decisionLog: SinkTarget;
  readonly agentExpirySeconds: number;
  readonly maxAgents: number;
  readonly maxUploadBytes: number;
  /** --unsigned-bundles: serve bundles without .signatures.json (every bundle is signed otherwise). */
  readonly unsignedBundles: boolean;
  readonly kube: KubeSettings;
  /** Standalone mode: how the manifests folder is read (DEFAULT_FOLDER when not given). */
  readonly folder?: FolderSettings;
}

/** Where a flag lands in Config: a field of its own, or a field of `kube` or `folder`. */
export type ConfigPath = Exclude<keyof Config, 'kube' | 'folder'> | `kube.${keyof KubeSettings}` | `folder.${keyof FolderSettings}`;

export type ConfigResult = { ok: true; config: Config } | { ok: false; message: string } | { ok: 'help' };
