// The OPA configuration acl-operator prints for one OPA and one bundle (service spec 4.4): in
// standalone mode as a file in the state folder, in Kubernetes mode in a ConfigMap of the tenant.
// One bundle per OPA because every bundle's manifest declares roots ["acl"] (the spec fixes
// `package acl`): an OPA given two of them activates one and refuses the other.
import { resolve } from 'node:path';
import { stringify } from 'yaml';

/** The label an OPA reports (status `labels`) naming the key it verifies bundles with. */
export const SIGNING_KEY_LABEL = 'acl-signing-key';

/**
 * decision_logs.reporting.upload_size_limit_bytes we print. OPA 0.61 and 1.1 lose decisions when a
 * flush spans several chunks of the default 32 KiB (about 9 % of a 3,000-decision burst, with
 * "Logs uploaded successfully" and no error; docs/opa.md, "Decision logs and chunk size"). At 256
 * KiB, 1.1 lost none of 20,000 and 0.61 none of 3,000. OPA caps a chunk's uncompressed size at 8
 * times this limit (measured: 2,096,564 bytes), so every chunk stays within the service's default
 * --max-upload-bytes (4 MiB, which applies after gunzip).
 */
export const DECISION_LOG_CHUNK_BYTES = 256 * 1024;

/** The public keys an OPA verifies with, and the one it is pinned to. */
export interface OpaSigning {
  /**
   * The key this OPA verifies with (`signing.keyid`). Pinned, because an OPA whose `signing` block
   * names no keyid accepts a bundle without `.signatures.json` (before OPA 1.21.3); and a pinned
   * keyid overrides the signature's `kid` (opa#8531), so the bundle resource names it too
   * (`?key=`): the service then signs what this OPA gets with the key it verifies with.
   */
  readonly keyid: string;
  /** Every key still signing (current and, during a rotation, previous), by kid. */
  readonly keys: readonly { readonly kid: string; readonly publicKeyPem: string }[];
}

interface OpaConfigInput {
  /** The service's base URL (scheme, host, port). */
  readonly url: string;
  /** The CA OPA must trust (`tls.ca_cert`), when the API speaks TLS. */
  readonly caFile: string | undefined;
  /** OPA's `credentials.bearer.token_path`: read again on every request, so a rotation needs no restart. */
  readonly tokenFile: string;
  readonly tenant: string;
  readonly connector: string;
  readonly bundle: string;
  /** Undefined: bundles are served unsigned (--unsigned-bundles), and OPA verifies nothing. */
  readonly signing?: OpaSigning | undefined;
  /** Where OPA persists the bundle (`persistence_directory`); OPA's default ($PWD/.opa) when absent. */
  readonly persistenceDirectory?: string | undefined;
  /** Paths printed as given (in a pod) rather than resolved against this process's directory. */
  readonly literalPaths?: boolean | undefined;
}

/** The path every OPA-facing endpoint of a connector sits under; OPA appends `bundles/<b>`, `status` and `logs`. */
function connectorPath(tenant: string, connector: string): string {
  return `/${tenant}/connectors/policyagent/${connector}`;
}

/** The bundle resource, relative to the connector's URL: `bundles/<b>`, and `?key=<kid>` when signed. */
function bundleResource(bundle: string, keyid: string | undefined): string {
  return keyid === undefined ? `bundles/${bundle}` : `bundles/${bundle}?key=${encodeURIComponent(keyid)}`;
}

/**
 * A service whose URL is the connector's path, so that the bundle, the status reports (OPA posts to
 * `<url>/status`) and the decision logs (`<url>/logs`) all carry the connector token to the same
 * place; long polling; persistence; the signing block and keys when bundles are signed.
 */
export function opaConfig(o: OpaConfigInput): string {
  const path = (p: string): string => (o.literalPaths ? p : resolve(p));
  const doc = {
    ...(o.signing ? { labels: { [SIGNING_KEY_LABEL]: o.signing.keyid } } : {}),
    services: {
      acl: {
        url: `${o.url}${connectorPath(o.tenant, o.connector)}`,
        ...(o.caFile ? { tls: { ca_cert: path(o.caFile) } } : {}),
        credentials: { bearer: { token_path: path(o.tokenFile) } },
      },
    },
    bundles: {
      [o.bundle]: {
        service: 'acl',
        resource: bundleResource(o.bundle, o.signing?.keyid),
        persist: true,
        polling: { min_delay_seconds: 10, max_delay_seconds: 30, long_polling_timeout_seconds: 60 },
        ...(o.signing ? { signing: { keyid: o.signing.keyid } } : {}),
      },
    },
    ...(o.signing ? { keys: Object.fromEntries(o.signing.keys.map((k) => [k.kid, { algorithm: 'RS256', key: k.publicKeyPem }])) } : {}),
    status: { service: 'acl' },
    decision_logs: {
      service: 'acl',
      reporting: { min_delay_seconds: 5, max_delay_seconds: 10, upload_size_limit_bytes: DECISION_LOG_CHUNK_BYTES },
    },
    ...(o.persistenceDirectory ? { persistence_directory: path(o.persistenceDirectory) } : {}),
  };
  const header = [
    `# OPA configuration for bundle ${o.tenant}/${o.bundle} (connector ${o.connector}), written by acl-operator.`,
    '# One bundle per OPA: every acl-operator bundle has roots ["acl"], so an OPA loading two of them',
    '# activates one and refuses the other. Status reports and decision logs go back to acl-operator.',
    ...(o.signing
      ? [
          `# Bundles are signed: this OPA activates only a bundle whose .signatures.json verifies with key`,
          `# ${o.signing.keyid} (signing.keyid), and refuses an unsigned or altered one.`,
        ]
      : ['# Bundles are served unsigned (acl-operator --unsigned-bundles): this OPA verifies nothing.']),
  ];
  return `${header.join('\n')}\n${stringify(doc, { lineWidth: 0 })}`;
}
