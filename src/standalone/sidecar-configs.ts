// OPA configurations for standalone mode: `<state-dir>/opa/<tenant>/<bundle>.yaml`, one per bundle,
// rewritten whenever the bundles change. One per bundle because every bundle's manifest declares
// roots ["acl"] (the spec fixes `package acl`): an OPA given two of them activates one and refuses
// the other ("detected overlapping roots"), and its /health?bundles never turns 200.
import { mkdir, readdir, readFile, rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import type { Snapshot } from '../store/index.ts';
import { writeAtomic } from './files.ts';

export interface OpaConfigInput {
  /** The service's base URL (scheme, host, port). */
  readonly url: string;
  /** The CA OPA must trust (`tls.ca_cert`), when the API speaks TLS. */
  readonly caFile: string | undefined;
  /** OPA's `credentials.bearer.token_path`: read again on every request, so a rotation needs no restart. */
  readonly tokenFile: string;
  readonly tenant: string;
  readonly connector: string;
  readonly bundle: string;
}

/** The path every OPA-facing endpoint of a connector sits under; OPA appends `bundles/<b>`, `status` and `logs`. */
export function connectorPath(tenant: string, connector: string): string {
  return `/${tenant}/connectors/policyagent/${connector}`;
}

/**
 * OPA configuration (service spec 4.4) for one OPA and one bundle: a service whose URL is the
 * connector's path, so that the bundle (`resource: bundles/<bundle>`), the status reports (OPA posts
 * to `<url>/status`) and the decision logs (`<url>/logs`) all carry the connector token to the same
 * place; long polling; persistence; status and decision logs reported back to the operator.
 */
export function opaConfig(o: OpaConfigInput): string {
  const doc = {
    services: {
      acl: {
        url: `${o.url}${connectorPath(o.tenant, o.connector)}`,
        ...(o.caFile ? { tls: { ca_cert: resolve(o.caFile) } } : {}),
        credentials: { bearer: { token_path: resolve(o.tokenFile) } },
      },
    },
    bundles: {
      [o.bundle]: {
        service: 'acl',
        resource: `bundles/${o.bundle}`,
        persist: true,
        polling: { min_delay_seconds: 10, max_delay_seconds: 30, long_polling_timeout_seconds: 60 },
      },
    },
    status: { service: 'acl' },
    decision_logs: { service: 'acl', reporting: { min_delay_seconds: 5, max_delay_seconds: 10 } },
  };
  const header = [
    `# OPA configuration for bundle ${o.tenant}/${o.bundle} (connector ${o.connector}), written by acl-operator.`,
    '# One bundle per OPA: every acl-operator bundle has roots ["acl"], so an OPA loading two of them',
    '# activates one and refuses the other. Status reports and decision logs go back to acl-operator.',
  ];
  return `${header.join('\n')}\n${stringify(doc)}`;
}

/** `<state-dir>/opa/<tenant>/<bundle>.yaml` */
export function opaConfigFile(stateDir: string, tenant: string, bundle: string): string {
  return join(stateDir, 'opa', tenant, `${bundle}.yaml`);
}

export interface OpaConfigWriter {
  /** Writes the configuration of every served bundle whose text changed, and removes the others. */
  sync(snapshot: Snapshot): Promise<void>;
}

/** Keeps `<state-dir>/opa/` equal to one configuration per bundle of the snapshot. */
export function createOpaConfigWriter(o: {
  readonly stateDir: string;
  readonly url: string;
  readonly caFile: string | undefined;
  readonly tokenFile: (tenant: string, connector: string) => string;
}): OpaConfigWriter {
  const root = join(o.stateDir, 'opa');
  let chain: Promise<void> = Promise.resolve();
  const run = async (snapshot: Snapshot): Promise<void> => {
    const wanted = new Map<string, string>();
    for (const t of snapshot.tenants.values()) {
      for (const b of t.bundles.values()) {
        if (!t.connectors.has(b.connector)) continue;
        const text = opaConfig({
          url: o.url,
          caFile: o.caFile,
          tokenFile: o.tokenFile(t.tenant, b.connector),
          tenant: t.tenant,
          connector: b.connector,
          bundle: b.name,
        });
        wanted.set(opaConfigFile(o.stateDir, t.tenant, b.name), text);
      }
    }
    for (const [file, text] of wanted) {
      if ((await readFile(file, 'utf8').catch(() => undefined)) !== text) await writeAtomic(file, text);
    }
    // Everything else in opa/ was written by us for a bundle that is gone (or by an older version,
    // one file per connector): an OPA started from it would fail, so it goes.
    await mkdir(root, { recursive: true });
    for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
      const full = join(entry.parentPath, entry.name);
      if (entry.isFile() && !wanted.has(full)) await rm(full, { force: true });
    }
    for (const entry of await readdir(root, { withFileTypes: true })) {
      if (entry.isDirectory()) await rmdir(join(root, entry.name)).catch(() => undefined);
    }
  };
  return {
    sync(snapshot) {
      chain = chain.then(
        () => run(snapshot),
        () => run(snapshot),
      );
      return chain;
    },
  };
}
