// The one reader of argv and the environment. Every flag has an environment variable; flags win.
import { parseArgs } from 'node:util';
import { z } from 'zod';

export const SERVE_USAGE = `Usage: acl-operator [serve] [options]

Runs the service: POST /authorization and the OPA bundle endpoint on the API listener, metrics and
health on the ops listener. With --manifests it runs standalone on a folder of YAML manifests;
without it, against the Kubernetes API (arrives with the operator; not available yet).

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
  --max-body-bytes <n>         Largest decision request body (default 1048576) [ACL_MAX_BODY_BYTES]
  --max-long-poll-seconds <n>  Longest a bundle request is held for Prefer: wait=N (default 120)
                               [ACL_MAX_LONG_POLL_SECONDS]
  --log-level <level>          fatal, error, warn, info, debug, trace or silent (default info) [ACL_LOG_LEVEL]
  -h, --help                   Show this help
`;

export interface Address { readonly host: string; readonly port: number }

/** "0.0.0.0:8443", ":8443", "[::1]:8443", "8443" */
export function parseAddress(text: string): Address | string {
  const m = /^(?:(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):)?(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) return `"${text}" is not host:port`;
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

const Bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes')]);
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
  'max-body-bytes': Int(1024, 64 * 1024 * 1024).default(1024 * 1024),
  'max-long-poll-seconds': Int(1, 3600).default(120),
  'log-level': z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Tls =
  | { readonly mode: 'files'; readonly cert: string; readonly key: string }
  | { readonly mode: 'self-signed' }
  | { readonly mode: 'insecure' };

export interface Config {
  readonly manifests: string | undefined;
  readonly stateDir: string;
  readonly listen: Address;
  readonly opsListen: Address;
  readonly tls: Tls;
  readonly maxBodyBytes: number;
  readonly maxLongPollSeconds: number;
  readonly logLevel: z.infer<typeof Raw>['log-level'];
}

const ENV: Record<keyof z.input<typeof Raw>, string> = {
  manifests: 'ACL_MANIFESTS', 'state-dir': 'ACL_STATE_DIR', listen: 'ACL_LISTEN', 'ops-listen': 'ACL_OPS_LISTEN',
  'tls-cert': 'ACL_TLS_CERT', 'tls-key': 'ACL_TLS_KEY', 'tls-self-signed': 'ACL_TLS_SELF_SIGNED', 'insecure-http': 'ACL_INSECURE_HTTP',
  'max-body-bytes': 'ACL_MAX_BODY_BYTES', 'max-long-poll-seconds': 'ACL_MAX_LONG_POLL_SECONDS', 'log-level': 'ACL_LOG_LEVEL',
};

export type ConfigResult = { ok: true; config: Config } | { ok: false; message: string } | { ok: 'help' };

/** Reads flags, then the environment for anything not given as a flag. */
export function readConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ConfigResult {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        manifests: { type: 'string' }, 'state-dir': { type: 'string' }, listen: { type: 'string' }, 'ops-listen': { type: 'string' },
        'tls-cert': { type: 'string' }, 'tls-key': { type: 'string' }, 'tls-self-signed': { type: 'boolean' }, 'insecure-http': { type: 'boolean' },
        'max-body-bytes': { type: 'string' }, 'max-long-poll-seconds': { type: 'string' }, 'log-level': { type: 'string' },
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
    return { ok: false, message: parsed.error.issues.map((i) => `--${String(i.path[0])} (${ENV[i.path[0] as keyof typeof ENV]}): ${i.message}`).join('; ') };
  }
  const r = parsed.data;
  const listen = parseAddress(r.listen);
  if (typeof listen === 'string') return { ok: false, message: `--listen: ${listen}` };
  const opsListen = parseAddress(r['ops-listen']);
  if (typeof opsListen === 'string') return { ok: false, message: `--ops-listen: ${opsListen}` };
  const chosen = [r['tls-cert'] || r['tls-key'] ? 'files' : undefined, r['tls-self-signed'] ? 'self-signed' : undefined, r['insecure-http'] ? 'insecure' : undefined].filter(Boolean);
  if (chosen.length === 0) {
    return { ok: false, message: 'the API listener needs TLS: give --tls-cert and --tls-key, or --tls-self-signed for a generated localhost certificate, or --insecure-http for plain HTTP (local use only)' };
  }
  if (chosen.length > 1) return { ok: false, message: `choose one of --tls-cert/--tls-key, --tls-self-signed and --insecure-http (got ${chosen.join(' and ')})` };
  let tls: Tls;
  if (chosen[0] === 'files') {
    if (!r['tls-cert'] || !r['tls-key']) return { ok: false, message: '--tls-cert and --tls-key go together' };
    tls = { mode: 'files', cert: r['tls-cert'], key: r['tls-key'] };
  } else {
    tls = { mode: chosen[0] as 'self-signed' | 'insecure' };
  }
  return {
    ok: true,
    config: {
      manifests: r.manifests, stateDir: r['state-dir'], listen, opsListen, tls,
      maxBodyBytes: r['max-body-bytes'], maxLongPollSeconds: r['max-long-poll-seconds'], logLevel: r['log-level'],
    },
  };
}
