// The one reader of argv and the environment. Every flag has an environment variable; flags win.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { DnsLabel, DnsSubdomain } from './api/meta.ts';
import type { SinkTarget } from './fleet/index.ts';

export const SERVE_USAGE = `Usage: acl-operator [serve] [options]

Runs the service: POST /authorization and the OPA bundle endpoint on the API listener, metrics and
health on the ops listener. With --manifests it runs standalone on a folder of YAML manifests;
without it, as the Kubernetes operator: it watches Rules, Connectors, Bundles and labelled Secrets
through the API server (in-cluster credentials, or KUBECONFIG / --kubeconfig).

Options (environment variable in brackets):
  --manifests <dir>            Folder of Rule, Connector, Bundle and API key Secret manifests, read
                               recursively and watched [ACL_MANIFESTS]
  --state-dir <dir>            Where tokens, generations, revisions and status are kept
                               (default .acl-state) [ACL_STATE_DIR]
  --listen <host:port>         API listener (default 0.0.0.0:8443) [ACL_LISTEN]
  --ops-listen <host:port>     Metrics and health listener, plain HTTP (default 0.0.0.0:9090) [ACL_OPS_LISTEN]
  --tls-cert <file>            PEM certificate of the API listener; reloaded when it changes [ACL_TLS_CERT]
  --tls-key <file>             PEM private key of the API listener [ACL_TLS_KEY]
  --tls-self-signed            Generate (once) a self-signed certificate for localhost in
                               <state-dir>/tls and serve HTTPS with it [ACL_TLS_SELF_SIGNED=true]
  --insecure-http              Serve the API over plain HTTP (local use only) [ACL_INSECURE_HTTP=true]
  --public-url <url>           Base URL clients reach the API at: the AuthZEN PDP identifier and the
                               base of the endpoints in /.well-known/authzen-configuration (default:
                               the API listener's URL; in Kubernetes https://<service>.<namespace>.svc:<port>)
                               [ACL_PUBLIC_URL]
  --max-body-bytes <n>         Largest decision request body (default 1048576) [ACL_MAX_BODY_BYTES]
  --max-long-poll-seconds <n>  Longest a bundle request is held for Prefer: wait=N (default 120)
                               [ACL_MAX_LONG_POLL_SECONDS]
  --log-level <level>          fatal, error, warn, info, debug, trace or silent (default info) [ACL_LOG_LEVEL]
  --decision-log <where>       One JSON line per decision, OPA's (from their decision-log uploads) and
                               the service's own: off (default), stdout, or a file path (appended,
                               created 0600; SIGHUP reopens it) [ACL_DECISION_LOG]
  --agent-expiry-seconds <n>   An OPA that has not reported its status for this long is forgotten
                               (default 300) [ACL_AGENT_EXPIRY_SECONDS]
  --max-agents <n>             OPA agents remembered at most, over all bundles (default 10000) [ACL_MAX_AGENTS]
  --max-upload-bytes <n>       Largest OPA status report or decision-log upload, received and after
                               gunzip (default 4194304) [ACL_MAX_UPLOAD_BYTES]

Standalone mode only:
  --settle-ms <n>              A changed manifest file is used once its bytes held still this long
                               (default 300; 0 uses it when first read) [ACL_SETTLE_MS]
  --max-manifest-bytes <n>     Largest manifest file read; a larger one is a problem and its objects
                               stay as they were (default 8388608) [ACL_MAX_MANIFEST_BYTES]
  --max-manifest-documents <n> Most YAML documents in one manifest file (default 20000)
                               [ACL_MAX_MANIFEST_DOCUMENTS]

Kubernetes mode only:
  --tls-secret <name>          kubernetes.io/tls Secret in the operator's namespace for the API
                               listener: created with a self-signed certificate for the Service
                               when missing, reloaded when it changes (e.g. cert-manager) [ACL_TLS_SECRET]
  --kubeconfig <file>          Kubeconfig to use (default: KUBECONFIG, then in-cluster) [ACL_KUBECONFIG]
  --namespaces <a,b>           Watch only these tenant namespaces (default: all) [ACL_NAMESPACES]
  --operator-namespace <ns>    Namespace of the leader Lease and the TLS Secret (default: POD_NAMESPACE,
                               then the service account's namespace, then acl-system) [ACL_OPERATOR_NAMESPACE]
  --service-name <name>        Service name the generated certificate is for (default acl-operator) [ACL_SERVICE_NAME]
  --identity <id>              This replica's name in the Lease (default: POD_NAME, then host-pid) [ACL_IDENTITY]
  --resync-seconds <n>         Every n seconds every object is reconciled again (default 300) [ACL_RESYNC_SECONDS]
  -h, --help                   Show this help
`;

export interface Address {
  readonly host: string;
  readonly port: number;
}

/** "0.0.0.0:8443", ":8443", "[::1]:8443", "8443" */
export function parseAddress(text: string): Address | string {
  const m = /^(?:(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):)?(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) return `"${text}" is not host:port`;
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/**
 * A public base URL: absolute, https (http only when the listener is plain HTTP), with no path,
 * query, fragment or credentials; a trailing slash is dropped (AuthZEN metadata: the PDP identifier).
 */
export function publicUrlOf(text: string, plainHttp: boolean): { ok: true; url: string } | { ok: false; message: string } {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return { ok: false, message: `"${text}" is not an absolute URL` };
  }
  if (u.protocol !== 'https:' && !(plainHttp && u.protocol === 'http:'))
    return { ok: false, message: `must be an https URL${plainHttp ? ' (or http, with --insecure-http)' : ''}, got ${u.protocol}` };
  if (u.search !== '' || u.hash !== '' || text.includes('?') || text.includes('#'))
    return { ok: false, message: 'must not have a query or a fragment' };
  if (u.username !== '' || u.password !== '') return { ok: false, message: 'must not carry credentials' };
  // AuthZEN metadata of a PDP identifier with a path lives at /.well-known/authzen-configuration/<path>,
  // which this service reads as the per-tenant form: an identifier is scheme, host and port only.
  if (u.pathname !== '/' && u.pathname !== '')
    return {
      ok: false,
      message: `must be scheme, host and port only (no path such as ${JSON.stringify(u.pathname)}): AuthZEN clients find the metadata at /.well-known/authzen-configuration of the host`,
    };
  return { ok: true, url: u.origin };
}

/**
 * The public URL in Kubernetes when --public-url is not given: the Service's in-cluster name, on the
 * listener's port (deploy/40-service.yaml maps the same port). An ephemeral port (0) names no
 * Service port: then the listener's own URL is used.
 */
export function kubePublicUrl(serviceName: string, namespace: string, port: number): string | undefined {
  return port === 0 ? undefined : `https://${serviceName}.${namespace}.svc${port === 443 ? '' : `:${port}`}`;
}

const Bool = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes'),
]);
const Int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const Raw = z.object({
  manifests: z.string().min(1).optional(),
  'state-dir': z.string().min(1).default('.acl-state'),
  listen: z.string().default('0.0.0.0:8443'),
  'ops-listen': z.string().default('0.0.0.0:9090'),
  'tls-cert': z.string().min(1).optional(),
  'tls-key': z.string().min(1).optional(),
  'tls-self-signed': Bool.default(false),
  'insecure-http': Bool.default(false),
  'public-url': z.string().min(1).optional(),
  'max-body-bytes': Int(1024, 64 * 1024 * 1024).default(1024 * 1024),
  'max-long-poll-seconds': Int(1, 3600).default(120),
  'log-level': z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  'decision-log': z.string().default('off'),
  'agent-expiry-seconds': Int(10, 86_400).default(300),
  'max-agents': Int(1, 1_000_000).default(10_000),
  'max-upload-bytes': Int(64 * 1024, 256 * 1024 * 1024).default(4 * 1024 * 1024),
  'settle-ms': Int(0, 60_000).default(300),
  'max-manifest-bytes': Int(1024, 1024 * 1024 * 1024).default(8 * 1024 * 1024),
  'max-manifest-documents': Int(1, 10_000_000).default(20_000),
  'tls-secret': DnsSubdomain.optional(),
  kubeconfig: z.string().min(1).optional(),
  namespaces: z.string().optional(),
  'operator-namespace': DnsLabel.optional(),
  'service-name': DnsLabel.default('acl-operator'),
  identity: z.string().min(1).max(128).optional(),
  'resync-seconds': Int(10, 86_400).default(300),
});

export type Tls =
  | { readonly mode: 'files'; readonly cert: string; readonly key: string }
  | { readonly mode: 'self-signed' }
  | { readonly mode: 'insecure' }
  /** Kubernetes mode: a TLS Secret in the operator's namespace, created when missing. */
  | { readonly mode: 'secret'; readonly name: string };

/** Settings of Kubernetes mode (no --manifests). */
export interface KubeSettings {
  readonly kubeconfig: string | undefined;
  /** undefined: every namespace. */
  readonly namespaces: readonly string[] | undefined;
  /** undefined: POD_NAMESPACE, then the service account's namespace file, then acl-system. */
  readonly operatorNamespace: string | undefined;
  readonly serviceName: string;
  readonly identity: string | undefined;
  readonly resyncSeconds: number;
}

/** Kubernetes settings when no flag or variable sets them. */
export const DEFAULT_KUBE: KubeSettings = {
  kubeconfig: undefined,
  namespaces: undefined,
  operatorNamespace: undefined,
  serviceName: 'acl-operator',
  identity: undefined,
  resyncSeconds: 300,
};

export interface Config {
  readonly manifests: string | undefined;
  readonly stateDir: string;
  readonly listen: Address;
  readonly opsListen: Address;
  readonly tls: Tls;
  /** --public-url without a trailing slash, or undefined for the default. */
  readonly publicUrl: string | undefined;
  readonly maxBodyBytes: number;
  readonly maxLongPollSeconds: number;
  readonly logLevel: z.infer<typeof Raw>['log-level'];
  /** Where decision lines go (--decision-log). */
  readonly decisionLog: SinkTarget;
  readonly agentExpirySeconds: number;
  readonly maxAgents: number;
  readonly maxUploadBytes: number;
  readonly kube: KubeSettings;
  /** Standalone mode: how the manifests folder is read (DEFAULT_FOLDER when not given). */
  readonly folder?: FolderSettings;
}

export interface FolderSettings {
  readonly settleMs: number;
  readonly maxManifestBytes: number;
  readonly maxManifestDocuments: number;
}

export const DEFAULT_FOLDER: FolderSettings = { settleMs: 300, maxManifestBytes: 8 * 1024 * 1024, maxManifestDocuments: 20_000 };

/** Settings of the OPA fleet when no flag or variable sets them. */
export const DEFAULT_FLEET = {
  decisionLog: { kind: 'off' },
  agentExpirySeconds: 300,
  maxAgents: 10_000,
  maxUploadBytes: 4 * 1024 * 1024,
} as const satisfies Pick<Config, 'decisionLog' | 'agentExpirySeconds' | 'maxAgents' | 'maxUploadBytes'>;

/** --decision-log: off, stdout (or -), or a file path. */
export function decisionLogOf(text: string): SinkTarget {
  const t = text.trim();
  if (t === '' || t === 'off' || t === 'false') return { kind: 'off' };
  if (t === 'stdout' || t === '-') return { kind: 'stdout' };
  return { kind: 'file', path: t };
}

const ENV: Record<keyof z.input<typeof Raw>, string> = {
  manifests: 'ACL_MANIFESTS',
  'state-dir': 'ACL_STATE_DIR',
  listen: 'ACL_LISTEN',
  'ops-listen': 'ACL_OPS_LISTEN',
  'tls-cert': 'ACL_TLS_CERT',
  'tls-key': 'ACL_TLS_KEY',
  'tls-self-signed': 'ACL_TLS_SELF_SIGNED',
  'insecure-http': 'ACL_INSECURE_HTTP',
  'public-url': 'ACL_PUBLIC_URL',
  'max-body-bytes': 'ACL_MAX_BODY_BYTES',
  'max-long-poll-seconds': 'ACL_MAX_LONG_POLL_SECONDS',
  'log-level': 'ACL_LOG_LEVEL',
  'decision-log': 'ACL_DECISION_LOG',
  'agent-expiry-seconds': 'ACL_AGENT_EXPIRY_SECONDS',
  'max-agents': 'ACL_MAX_AGENTS',
  'max-upload-bytes': 'ACL_MAX_UPLOAD_BYTES',
  'settle-ms': 'ACL_SETTLE_MS',
  'max-manifest-bytes': 'ACL_MAX_MANIFEST_BYTES',
  'max-manifest-documents': 'ACL_MAX_MANIFEST_DOCUMENTS',
  'tls-secret': 'ACL_TLS_SECRET',
  kubeconfig: 'ACL_KUBECONFIG',
  namespaces: 'ACL_NAMESPACES',
  'operator-namespace': 'ACL_OPERATOR_NAMESPACE',
  'service-name': 'ACL_SERVICE_NAME',
  identity: 'ACL_IDENTITY',
  'resync-seconds': 'ACL_RESYNC_SECONDS',
};

export type ConfigResult = { ok: true; config: Config } | { ok: false; message: string } | { ok: 'help' };

/** Reads flags, then the environment for anything not given as a flag. */
export function readConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ConfigResult {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        manifests: { type: 'string' },
        'state-dir': { type: 'string' },
        listen: { type: 'string' },
        'ops-listen': { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
        'tls-self-signed': { type: 'boolean' },
        'insecure-http': { type: 'boolean' },
        'public-url': { type: 'string' },
        'max-body-bytes': { type: 'string' },
        'max-long-poll-seconds': { type: 'string' },
        'log-level': { type: 'string' },
        'decision-log': { type: 'string' },
        'agent-expiry-seconds': { type: 'string' },
        'max-agents': { type: 'string' },
        'max-upload-bytes': { type: 'string' },
        'settle-ms': { type: 'string' },
        'max-manifest-bytes': { type: 'string' },
        'max-manifest-documents': { type: 'string' },
        'tls-secret': { type: 'string' },
        kubeconfig: { type: 'string' },
        namespaces: { type: 'string' },
        'operator-namespace': { type: 'string' },
        'service-name': { type: 'string' },
        identity: { type: 'string' },
        'resync-seconds': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  if (values['help']) return { ok: 'help' };
  const merged: Record<string, unknown> = {};
  for (const [flag, name] of Object.entries(ENV)) {
    const v = values[flag] ?? env[name];
    if (v !== undefined && v !== '') merged[flag] = v;
  }
  const parsed = Raw.safeParse(merged);
  if (!parsed.success) {
    return {
      ok: false,
      message: parsed.error.issues.map((i) => `--${String(i.path[0])} (${ENV[i.path[0] as keyof typeof ENV]}): ${i.message}`).join('; '),
    };
  }
  const r = parsed.data;
  const listen = parseAddress(r.listen);
  if (typeof listen === 'string') return { ok: false, message: `--listen: ${listen}` };
  const opsListen = parseAddress(r['ops-listen']);
  if (typeof opsListen === 'string') return { ok: false, message: `--ops-listen: ${opsListen}` };
  const chosen = [
    r['tls-cert'] || r['tls-key'] ? 'files' : undefined,
    r['tls-self-signed'] ? 'self-signed' : undefined,
    r['insecure-http'] ? 'insecure' : undefined,
    r['tls-secret'] ? 'secret' : undefined,
  ].filter(Boolean);
  if (chosen.length === 0) {
    return {
      ok: false,
      message:
        r.manifests === undefined
          ? 'the API listener needs TLS: give --tls-secret (a Secret in the operator namespace, created when missing), or --tls-cert and --tls-key, or --insecure-http for plain HTTP'
          : 'the API listener needs TLS: give --tls-cert and --tls-key, or --tls-self-signed for a generated localhost certificate, or --insecure-http for plain HTTP (local use only)',
    };
  }
  if (chosen.length > 1)
    return {
      ok: false,
      message: `choose one of --tls-cert/--tls-key, --tls-self-signed, --tls-secret and --insecure-http (got ${chosen.join(' and ')})`,
    };
  if (chosen[0] === 'secret' && r.manifests !== undefined)
    return { ok: false, message: '--tls-secret is for Kubernetes mode: with --manifests use --tls-cert/--tls-key or --tls-self-signed' };
  let tls: Tls;
  if (chosen[0] === 'files') {
    if (!r['tls-cert'] || !r['tls-key']) return { ok: false, message: '--tls-cert and --tls-key go together' };
    tls = { mode: 'files', cert: r['tls-cert'], key: r['tls-key'] };
  } else if (chosen[0] === 'secret') {
    tls = { mode: 'secret', name: r['tls-secret'] ?? '' };
  } else {
    tls = { mode: chosen[0] as 'self-signed' | 'insecure' };
  }
  let namespaces: string[] | undefined;
  if (r.namespaces !== undefined && r.namespaces.trim() !== '') {
    namespaces = [
      ...new Set(
        r.namespaces
          .split(',')
          .map((n) => n.trim())
          .filter((n) => n !== ''),
      ),
    ].sort();
    const bad = namespaces.filter((n) => !DnsLabel.safeParse(n).success);
    if (bad.length > 0)
      return {
        ok: false,
        message: `--namespaces (ACL_NAMESPACES): ${bad.map((n) => JSON.stringify(n)).join(', ')} is not a namespace name`,
      };
  }
  let publicUrl: string | undefined;
  if (r['public-url'] !== undefined) {
    const checked = publicUrlOf(r['public-url'], tls.mode === 'insecure');
    if (!checked.ok) return { ok: false, message: `--public-url (ACL_PUBLIC_URL): ${checked.message}` };
    publicUrl = checked.url;
  }
  const kube: KubeSettings = {
    kubeconfig: r.kubeconfig,
    namespaces,
    operatorNamespace: r['operator-namespace'],
    serviceName: r['service-name'],
    identity: r.identity,
    resyncSeconds: r['resync-seconds'],
  };
  return {
    ok: true,
    config: {
      manifests: r.manifests,
      stateDir: r['state-dir'],
      listen,
      opsListen,
      tls,
      publicUrl,
      maxBodyBytes: r['max-body-bytes'],
      maxLongPollSeconds: r['max-long-poll-seconds'],
      logLevel: r['log-level'],
      decisionLog: decisionLogOf(r['decision-log']),
      agentExpirySeconds: r['agent-expiry-seconds'],
      maxAgents: r['max-agents'],
      maxUploadBytes: r['max-upload-bytes'],
      kube,
      folder: { settleMs: r['settle-ms'], maxManifestBytes: r['max-manifest-bytes'], maxManifestDocuments: r['max-manifest-documents'] },
    },
  };
}
