// The one reader of argv and the environment. Every flag has an environment variable; flags win.
// The flags are rows of one table (config/flags.ts); this module turns their values into a Config
// and is the only import surface of config/.
import { DnsLabel } from './api/index.ts';
import { DEFAULTS, FLAGS, flagLabel, type RawValues } from './config/flags.ts';
import { readFlags } from './config/read.ts';
import type { Config, ConfigResult, FolderSettings, KubeSettings, PodIdentity, Tls } from './config/types.ts';
import { serveUsage } from './config/usage.ts';
import { decisionLogOf, parseAddress, publicUrlOf } from './config/values.ts';

export type { Address, Config, ConfigResult, FolderSettings, KubeSettings, Tls } from './config/types.ts';
export { kubePublicUrl, parseAddress } from './config/values.ts';

/** `acl-operator serve --help`. */
export const SERVE_USAGE = serveUsage();

/** Kubernetes settings when no flag or variable sets them (and outside a Pod). */
export const DEFAULT_KUBE: KubeSettings = {
  kubeconfig: undefined,
  namespaces: undefined,
  operatorNamespace: undefined,
  serviceName: DEFAULTS['service-name'],
  webhookConfiguration: undefined,
  identity: undefined,
  resyncSeconds: DEFAULTS['resync-seconds'],
  signingKeySecret: DEFAULTS['signing-key-secret'],
  pod: {},
  kubeconfigVariable: undefined,
};

/** How the manifests folder is read when no flag or variable sets it. */
export const DEFAULT_FOLDER: FolderSettings = {
  settleMs: DEFAULTS['settle-ms'],
  rescanSeconds: DEFAULTS['rescan-seconds'],
  maxManifestBytes: DEFAULTS['max-manifest-bytes'],
  maxManifestDocuments: DEFAULTS['max-manifest-documents'],
};

/** Settings of the OPA fleet when no flag or variable sets them. */
export const DEFAULT_FLEET: Pick<Config, 'decisionLog' | 'agentExpirySeconds' | 'maxAgents' | 'maxUploadBytes'> = {
  decisionLog: decisionLogOf(DEFAULTS['decision-log']),
  agentExpirySeconds: DEFAULTS['agent-expiry-seconds'],
  maxAgents: DEFAULTS['max-agents'],
  maxUploadBytes: DEFAULTS['max-upload-bytes'],
};

/** Where `status` and `render` look when not told: ACL_STATE_DIR (else .acl-state) and ACL_MANIFESTS. */
export interface CommandDefaults {
  readonly stateDir: string;
  readonly manifests: string | undefined;
}

/** The defaults of the status and render commands from the environment; unlike serve, a set but empty variable is kept. */
export function commandDefaults(env: NodeJS.ProcessEnv): CommandDefaults {
  return { stateDir: env[FLAGS['state-dir'].env] ?? DEFAULTS['state-dir'], manifests: env[FLAGS.manifests.env] };
}

/** The Pod from the Downward API's variables, as they are (an empty one stays empty). */
function podOf(env: NodeJS.ProcessEnv): PodIdentity {
  return { namespace: env['POD_NAMESPACE'], name: env['POD_NAME'], uid: env['POD_UID'] };
}

type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

const TLS_NEEDED = {
  kubernetes:
    'the API listener needs TLS: give --tls-secret (a Secret in the operator namespace, created when missing), or --tls-cert and --tls-key, or --insecure-http for plain HTTP',
  standalone:
    'the API listener needs TLS: give --tls-cert and --tls-key, or --tls-self-signed for a generated localhost certificate, or --insecure-http for plain HTTP (local use only)',
};

/** Exactly one way to serve the API: a certificate pair, self-signed, a Secret (Kubernetes only) or plain HTTP. */
function tlsOf(r: RawValues): Checked<Tls> {
  const chosen = [
    r['tls-cert'] || r['tls-key'] ? 'files' : undefined,
    r['tls-self-signed'] ? 'self-signed' : undefined,
    r['insecure-http'] ? 'insecure' : undefined,
    r['tls-secret'] ? 'secret' : undefined,
  ].filter(Boolean);
  if (chosen.length === 0) return { ok: false, message: r.manifests === undefined ? TLS_NEEDED.kubernetes : TLS_NEEDED.standalone };
  if (chosen.length > 1)
    return {
      ok: false,
      message: `choose one of --tls-cert/--tls-key, --tls-self-signed, --tls-secret and --insecure-http (got ${chosen.join(' and ')})`,
    };
  if (chosen[0] === 'secret' && r.manifests !== undefined)
    return { ok: false, message: '--tls-secret is for Kubernetes mode: with --manifests use --tls-cert/--tls-key or --tls-self-signed' };
  if (chosen[0] === 'files') {
    if (!r['tls-cert'] || !r['tls-key']) return { ok: false, message: '--tls-cert and --tls-key go together' };
    return { ok: true, value: { mode: 'files', cert: r['tls-cert'], key: r['tls-key'] } };
  }
  if (chosen[0] === 'secret') return { ok: true, value: { mode: 'secret', name: r['tls-secret'] ?? '' } };
  return { ok: true, value: { mode: chosen[0] as 'self-signed' | 'insecure' } };
}

/** Why --webhook-config cannot be kept with these flags: its caBundle is the CA of the TLS Secret. */
function webhookOf(r: RawValues, tls: Tls): string | undefined {
  if (!r['webhook-config']) return undefined;
  if (r.manifests !== undefined) return `${flagLabel('webhook-config')} is for Kubernetes mode`;
  if (tls.mode !== 'secret')
    return `${flagLabel('webhook-config')}: the caBundle kept is the CA of --tls-secret; give --tls-secret, or leave the caBundle to cert-manager`;
  return undefined;
}

/** --namespaces "b, a,b" as ["a", "b"]: trimmed, deduplicated, sorted; undefined (every namespace) when blank. */
function namespacesOf(text: string | undefined): Checked<string[] | undefined> {
  if (text === undefined || text.trim() === '') return { ok: true, value: undefined };
  const names = [
    ...new Set(
      text
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n !== ''),
    ),
  ].sort();
  const bad = names.filter((n) => !DnsLabel.safeParse(n).success);
  if (bad.length > 0)
    return { ok: false, message: `${flagLabel('namespaces')}: ${bad.map((n) => JSON.stringify(n)).join(', ')} is not a namespace name` };
  return { ok: true, value: names };
}

function publicUrlValue(text: string | undefined, tls: Tls): Checked<string | undefined> {
  if (text === undefined) return { ok: true, value: undefined };
  const checked = publicUrlOf(text, tls.mode === 'insecure');
  return checked.ok ? { ok: true, value: checked.url } : { ok: false, message: `${flagLabel('public-url')}: ${checked.message}` };
}

function kubeOf(r: RawValues, namespaces: string[] | undefined, env: NodeJS.ProcessEnv): KubeSettings {
  return {
    kubeconfig: r.kubeconfig,
    namespaces,
    operatorNamespace: r['operator-namespace'],
    serviceName: r['service-name'],
    webhookConfiguration: r['webhook-config'] || undefined,
    identity: r.identity,
    resyncSeconds: r['resync-seconds'],
    signingKeySecret: r['signing-key-secret'],
    pod: podOf(env),
    kubeconfigVariable: env['KUBECONFIG'],
  };
}

/** The checked flag values as a Config, or the first thing wrong with how they combine. */
function configOf(r: RawValues, env: NodeJS.ProcessEnv): ConfigResult {
  const listen = parseAddress(r.listen);
  if (typeof listen === 'string') return { ok: false, message: `--listen: ${listen}` };
  const opsListen = parseAddress(r['ops-listen']);
  if (typeof opsListen === 'string') return { ok: false, message: `--ops-listen: ${opsListen}` };
  const consoleListen = r['console-listen'] === 'off' ? undefined : parseAddress(r['console-listen']);
  if (typeof consoleListen === 'string') return { ok: false, message: `--console-listen: ${consoleListen}` };
  const tls = tlsOf(r);
  if (!tls.ok) return tls;
  const webhook = webhookOf(r, tls.value);
  if (webhook) return { ok: false, message: webhook };
  const namespaces = namespacesOf(r.namespaces);
  if (!namespaces.ok) return namespaces;
  const publicUrl = publicUrlValue(r['public-url'], tls.value);
  if (!publicUrl.ok) return publicUrl;
  const config: Config = {
    manifests: r.manifests,
    stateDir: r['state-dir'],
    listen,
    opsListen,
    consoleListen,
    opa: r.opa,
    tls: tls.value,
    publicUrl: publicUrl.value,
    maxBodyBytes: r['max-body-bytes'],
    maxLongPollSeconds: r['max-long-poll-seconds'],
    logLevel: r['log-level'],
    logFormat: r['log-format'],
    decisionLog: decisionLogOf(r['decision-log']),
    agentExpirySeconds: r['agent-expiry-seconds'],
    maxAgents: r['max-agents'],
    maxUploadBytes: r['max-upload-bytes'],
    unsignedBundles: r['unsigned-bundles'],
    kube: kubeOf(r, namespaces.value, env),
    folder: {
      settleMs: r['settle-ms'],
      rescanSeconds: r['rescan-seconds'],
      maxManifestBytes: r['max-manifest-bytes'],
      maxManifestDocuments: r['max-manifest-documents'],
    },
  };
  return { ok: true, config };
}

/** Reads flags, then the environment for anything not given as a flag; -h asks for help. */
export function readConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ConfigResult {
  const read = readFlags(argv, env);
  return read.ok === true ? configOf(read.values, env) : read;
}

/**
 * The Config that `acl-operator serve <argv>` would run with in an empty environment: every value
 * not given comes from the flags table, as in production. For tests and benchmarks; a bad flag throws.
 */
export function configFromFlags(argv: readonly string[]): Config {
  const read = readConfig(argv, {});
  if (read.ok !== true) throw new Error(read.ok === 'help' ? 'configFromFlags: --help asks for no Config' : read.message);
  return read.config;
}
