// OPA configurations for standalone mode: `<state-dir>/opa/<tenant>/<bundle>.yaml`, one per bundle
// (opa/config.ts says why one), rewritten whenever the bundles change.
import { mkdir, readdir, readFile, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { opaConfig } from '../opa/index.ts';
import type { Snapshot } from '../store/index.ts';
import { writeAtomic } from './files.ts';

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
