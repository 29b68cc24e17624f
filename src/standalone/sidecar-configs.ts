// OPA configurations for standalone mode: `<state-dir>/opa/<tenant>/<bundle>.yaml`, one per bundle
// (opa/config.ts says why one), pinned to the current signing key and holding every key that signs,
// and `<state-dir>/opa/keys/<kid>.pem` the public keys; rewritten whenever the bundles or the keys change.
import { mkdir, readdir, readFile, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { SigningState } from '../controller/index.ts';
import { opaConfig, type OpaSigning } from '../opa/index.ts';
import { ringKeys } from '../signing/index.ts';
import type { Snapshot } from '../store/index.ts';
import { writeAtomic } from './files.ts';

/** `<state-dir>/opa/<tenant>/<bundle>.yaml` */
export function opaConfigFile(stateDir: string, tenant: string, bundle: string): string {
  return join(stateDir, 'opa', tenant, `${bundle}.yaml`);
}

/** `<state-dir>/opa/keys/<kid>.pem`: a public key that signs bundles (SPKI PEM). */
export function publicKeyFile(stateDir: string, kid: string): string {
  return join(stateDir, 'opa', 'keys', `${kid}.pem`);
}

/** What an OPA configuration says of signing: undefined when unsigned; `none` while no key was ever read. */
function signingOf(state: SigningState): OpaSigning | undefined | 'none' {
  if (state.unsigned) return undefined;
  if (!state.ring) return 'none';
  return { keyid: state.ring.current.kid, keys: ringKeys(state.ring).map((k) => ({ kid: k.kid, publicKeyPem: k.publicKeyPem })) };
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
  /** The keys bundles are signed with now. */
  readonly signing: () => SigningState;
}): OpaConfigWriter {
  const root = join(o.stateDir, 'opa');
  let chain: Promise<void> = Promise.resolve();
  const run = async (snapshot: Snapshot): Promise<void> => {
    const signing = signingOf(o.signing());
    // No key was ever read: nothing is served, and no configuration could verify; leave the files be.
    if (signing === 'none') return;
    const wanted = new Map<string, string>();
    for (const k of signing?.keys ?? []) wanted.set(publicKeyFile(o.stateDir, k.kid), k.publicKeyPem);
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
          signing,
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
