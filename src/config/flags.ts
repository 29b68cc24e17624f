// The serve flags, one row each: its argument, environment variable, validator (with the default),
// help lines, --help section and where it lands in Config. The --help text, parseArgs's options,
// the environment mapping and the zod schema are all derived from these rows.
import { z } from 'zod';
import { DnsLabel, DnsSubdomain } from '../api/index.ts';
import { LOG_FORMATS, LOG_LEVELS, type ConfigPath } from './types.ts';

/** The heading of --help a flag is listed under. */
export type Section = 'common' | 'standalone' | 'kubernetes';

export interface Flag {
  /** What follows the flag in --help (`<dir>`); a flag without one is a switch. */
  readonly arg?: string;
  readonly env: string;
  /** The validator; its `.default()` is the flag's default. */
  readonly schema: z.ZodType;
  /** --help lines: `{default}` stands for the default; the variable ends the last line (alone on it when it is ''). */
  readonly help: readonly string[];
  readonly section: Section;
  /** Where the value lands in Config (the TLS flags choose `tls` together). */
  readonly into: ConfigPath;
}

const Bool = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes'),
]);
const Int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

// The order is the order of --help, and of the messages when several flags are wrong.
export const FLAGS = {
  manifests: {
    arg: '<dir>',
    env: 'ACL_MANIFESTS',
    schema: z.string().min(1).optional(),
    help: ['Folder of Rule, Connector, Bundle and API key Secret manifests, read', 'recursively and watched'],
    section: 'common',
    into: 'manifests',
  },
  'state-dir': {
    arg: '<dir>',
    env: 'ACL_STATE_DIR',
    schema: z.string().min(1).default('.acl-state'),
    help: ['Where tokens, generations, revisions and status are kept', '(default {default})'],
    section: 'common',
    into: 'stateDir',
  },
  listen: {
    arg: '<host:port>',
    env: 'ACL_LISTEN',
    schema: z.string().default('0.0.0.0:8443'),
    help: ['API listener (default {default})'],
    section: 'common',
    into: 'listen',
  },
  'ops-listen': {
    arg: '<host:port>',
    env: 'ACL_OPS_LISTEN',
    schema: z.string().default('0.0.0.0:9090'),
    help: ['Metrics and health listener, plain HTTP (default {default})'],
    section: 'common',
    into: 'opsListen',
  },
  'tls-cert': {
    arg: '<file>',
    env: 'ACL_TLS_CERT',
    schema: z.string().min(1).optional(),
    help: ['PEM certificate of the API listener; reloaded when it changes'],
    section: 'common',
    into: 'tls',
  },
  'tls-key': {
    arg: '<file>',
    env: 'ACL_TLS_KEY',
    schema: z.string().min(1).optional(),
    help: ['PEM private key of the API listener'],
    section: 'common',
    into: 'tls',
  },
  'tls-self-signed': {
    env: 'ACL_TLS_SELF_SIGNED',
    schema: Bool.default(false),
    help: ['Generate (once) a self-signed certificate for localhost in', '<state-dir>/tls and serve HTTPS with it'],
    section: 'common',
    into: 'tls',
  },
  'insecure-http': {
    env: 'ACL_INSECURE_HTTP',
    schema: Bool.default(false),
    help: ['Serve the API over plain HTTP (local use only)'],
    section: 'common',
    into: 'tls',
  },
  'unsigned-bundles': {
    env: 'ACL_UNSIGNED_BUNDLES',
    schema: Bool.default(false),
    help: [
      'Serve bundles without .signatures.json, for an OPA older than 0.61',
      '(default: every bundle is signed, docs/opa.md "Signed bundles")',
    ],
    section: 'common',
    into: 'unsignedBundles',
  },
  'public-url': {
    arg: '<url>',
    env: 'ACL_PUBLIC_URL',
    schema: z.string().min(1).optional(),
    help: [
      'Base URL clients reach the API at: the AuthZEN PDP identifier and the',
      'base of the endpoints in /.well-known/authzen-configuration (default:',
      "the API listener's URL; in Kubernetes https://<service>.<namespace>.svc:<port>)",
      '',
    ],
    section: 'common',
    into: 'publicUrl',
  },
  'max-body-bytes': {
    arg: '<n>',
    env: 'ACL_MAX_BODY_BYTES',
    schema: Int(1024, 64 * 1024 * 1024).default(1024 * 1024),
    help: ['Largest decision request body (default {default})'],
    section: 'common',
    into: 'maxBodyBytes',
  },
  'max-long-poll-seconds': {
    arg: '<n>',
    env: 'ACL_MAX_LONG_POLL_SECONDS',
    schema: Int(1, 3600).default(120),
    help: ['Longest a bundle request is held for Prefer: wait=N (default {default})', ''],
    section: 'common',
    into: 'maxLongPollSeconds',
  },
  'log-level': {
    arg: '<level>',
    env: 'ACL_LOG_LEVEL',
    schema: z.enum(LOG_LEVELS).default('info'),
    help: ['fatal, error, warn, info, debug, trace or silent (default {default})'],
    section: 'common',
    into: 'logLevel',
  },
  'log-format': {
    arg: '<format>',
    env: 'ACL_LOG_FORMAT',
    schema: z.enum(LOG_FORMATS).default('auto'),
    help: ['Log lines: json, pretty (one line a person reads per event), or {default}', '(default): pretty on a terminal, json otherwise'],
    section: 'common',
    into: 'logFormat',
  },
  'console-listen': {
    arg: '<host:port>',
    env: 'ACL_CONSOLE_LISTEN',
    schema: z.string().default('127.0.0.1:8080'),
    help: ['The console (docs/console.md), plain HTTP on loopback by default', '(default {default}); off turns it off'],
    section: 'common',
    into: 'consoleListen',
  },
  opa: {
    arg: '<binary>',
    env: 'ACL_OPA',
    schema: z.string().min(1).optional(),
    help: ["An OPA binary the console's playground also decides with (default: none)"],
    section: 'common',
    into: 'opa',
  },
  'decision-log': {
    arg: '<where>',
    env: 'ACL_DECISION_LOG',
    schema: z.string().default('off'),
    help: [
      "One JSON line per decision, OPA's (from their decision-log uploads) and",
      "the service's own: {default} (default), stdout, or a file path (appended,",
      'created 0600; SIGHUP reopens it)',
    ],
    section: 'common',
    into: 'decisionLog',
  },
  'agent-expiry-seconds': {
    arg: '<n>',
    env: 'ACL_AGENT_EXPIRY_SECONDS',
    schema: Int(10, 86_400).default(300),
    help: ['An OPA that has not reported its status for this long is forgotten', '(default {default})'],
    section: 'common',
    into: 'agentExpirySeconds',
  },
  'max-agents': {
    arg: '<n>',
    env: 'ACL_MAX_AGENTS',
    schema: Int(1, 1_000_000).default(10_000),
    help: ['OPA agents remembered at most, over all bundles (default {default})'],
    section: 'common',
    into: 'maxAgents',
  },
  'max-upload-bytes': {
    arg: '<n>',
    env: 'ACL_MAX_UPLOAD_BYTES',
    schema: Int(64 * 1024, 256 * 1024 * 1024).default(4 * 1024 * 1024),
    help: ['Largest OPA status report or decision-log upload, received and after', 'gunzip (default {default})'],
    section: 'common',
    into: 'maxUploadBytes',
  },
  'settle-ms': {
    arg: '<n>',
    env: 'ACL_SETTLE_MS',
    schema: Int(0, 60_000).default(300),
    help: ['A changed manifest file is used once its bytes held still this long', '(default {default}; 0 uses it when first read)'],
    section: 'standalone',
    into: 'folder.settleMs',
  },
  'rescan-seconds': {
    arg: '<n>',
    env: 'ACL_RESCAN_SECONDS',
    schema: Int(0, 86_400).default(10),
    help: ['The manifests folder is read again this often even when its watch', 'told no change (default {default}; 0: never)'],
    section: 'standalone',
    into: 'folder.rescanSeconds',
  },
  'max-manifest-bytes': {
    arg: '<n>',
    env: 'ACL_MAX_MANIFEST_BYTES',
    schema: Int(1024, 1024 * 1024 * 1024).default(8 * 1024 * 1024),
    help: ['Largest manifest file read; a larger one is a problem and its objects', 'stay as they were (default {default})'],
    section: 'standalone',
    into: 'folder.maxManifestBytes',
  },
  'max-manifest-documents': {
    arg: '<n>',
    env: 'ACL_MAX_MANIFEST_DOCUMENTS',
    schema: Int(1, 10_000_000).default(20_000),
    help: ['Most YAML documents in one manifest file (default {default})', ''],
    section: 'standalone',
    into: 'folder.maxManifestDocuments',
  },
  'tls-secret': {
    arg: '<name>',
    env: 'ACL_TLS_SECRET',
    schema: DnsSubdomain.optional(),
    help: [
      "kubernetes.io/tls Secret in the operator's namespace for the API",
      'listener: created with a self-signed certificate for the Service',
      'when missing, reloaded when it changes (e.g. cert-manager)',
    ],
    section: 'kubernetes',
    into: 'tls',
  },
  'signing-key-secret': {
    arg: '<name>',
    env: 'ACL_SIGNING_KEY_SECRET',
    schema: DnsSubdomain.default('acl-signing-key'),
    help: [
      "Secret in the operator's namespace holding the bundle signing key",
      '(tls.key, and previous.key during a rotation): created with a new',
      'RSA key when missing (default {default})',
    ],
    section: 'kubernetes',
    into: 'kube.signingKeySecret',
  },
  kubeconfig: {
    arg: '<file>',
    env: 'ACL_KUBECONFIG',
    schema: z.string().min(1).optional(),
    help: ['Kubeconfig to use (default: KUBECONFIG, then in-cluster)'],
    section: 'kubernetes',
    into: 'kube.kubeconfig',
  },
  namespaces: {
    arg: '<a,b>',
    env: 'ACL_NAMESPACES',
    schema: z.string().optional(),
    help: ['Watch only these tenant namespaces (default: all)'],
    section: 'kubernetes',
    into: 'kube.namespaces',
  },
  'operator-namespace': {
    arg: '<ns>',
    env: 'ACL_OPERATOR_NAMESPACE',
    schema: DnsLabel.optional(),
    help: [
      'Namespace of the leader Lease and the TLS Secret (default: POD_NAMESPACE,',
      "then the service account's namespace, then acl-system)",
    ],
    section: 'kubernetes',
    into: 'kube.operatorNamespace',
  },
  'service-name': {
    arg: '<name>',
    env: 'ACL_SERVICE_NAME',
    schema: DnsLabel.default('acl-operator'),
    help: ['Service name the generated certificate is for (default {default})'],
    section: 'kubernetes',
    into: 'kube.serviceName',
  },
  'webhook-config': {
    arg: '<name>',
    env: 'ACL_WEBHOOK_CONFIG',
    schema: z.union([z.literal(''), DnsSubdomain]).optional(),
    help: [
      'ValidatingWebhookConfiguration whose caBundle the leader keeps equal to',
      'the CA of --tls-secret (default: none; left alone when annotated',
      'cert-manager.io/inject-ca-from)',
    ],
    section: 'kubernetes',
    into: 'kube.webhookConfiguration',
  },
  identity: {
    arg: '<id>',
    env: 'ACL_IDENTITY',
    schema: z.string().min(1).max(128).optional(),
    help: ["This replica's name in the Lease (default: POD_NAME, then host-pid)"],
    section: 'kubernetes',
    into: 'kube.identity',
  },
  'resync-seconds': {
    arg: '<n>',
    env: 'ACL_RESYNC_SECONDS',
    schema: Int(10, 86_400).default(300),
    help: ['Every n seconds every object is reconciled again (default {default})'],
    section: 'kubernetes',
    into: 'kube.resyncSeconds',
  },
} as const satisfies Record<string, Flag>;

export type FlagName = keyof typeof FLAGS;

/** Every flag's name, in the table's order. */
export const FLAG_NAMES = Object.keys(FLAGS) as FlagName[];

type Shape<T extends Record<string, Flag>> = { [K in keyof T]: T[K]['schema'] };

function shapeOf<T extends Record<string, Flag>>(table: T): Shape<T> {
  // Each row's schema keeps its own type under its name; Object.fromEntries cannot say so, hence the cast.
  return Object.fromEntries(Object.entries(table).map(([name, flag]) => [name, flag.schema])) as Shape<T>;
}

/** The validator of every flag's value, keyed by flag name. */
export const Raw = z.object(shapeOf(FLAGS));
export type RawValues = z.output<typeof Raw>;

/** Every flag's value when nothing sets it. */
export const DEFAULTS: RawValues = Raw.parse({});

/** `--name (ACL_NAME)`: how a message names a flag, so people find it either way. */
export function flagLabel(name: FlagName): string {
  return `--${name} (${FLAGS[name].env})`;
}
