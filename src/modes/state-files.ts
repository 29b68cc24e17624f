// The files standalone mode keeps for the OPAs beside its state: token files (OPA's token_path) and
// token Secrets written back when deleted or changed, and one OPA configuration per bundle,
// rewritten as bundles come and go and as the signing keys change.
import { watch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { SigningHolder } from '../controller/index.ts';
import { createOpaConfigWriter, type StateFolder } from '../standalone/index.ts';
import type { Store } from '../store/index.ts';
import type { Listening } from '../server/index.ts';

/** Calls `changed` (debounced) when anything under the folders changes; the folders are created first. */
async function watchFolders(dirs: readonly string[], changed: () => void, log: Logger): Promise<{ close(): void }> {
  let timer: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      changed();
    }, 50);
    timer.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const dir of dirs) {
    await mkdir(dir, { recursive: true });
    const w = watch(dir, { recursive: true }, schedule);
    w.on('error', (err) => log.warn({ err, dir }, 'Stopped watching the token files (they are still checked every flush)'));
    watchers.push(w);
  }
  return {
    close() {
      for (const w of watchers) w.close();
      if (timer) clearTimeout(timer);
    },
  };
}

export interface TokenFiles {
  /** Writes back, from memory, token files and token Secrets that were deleted or changed (logged, never thrown). */
  repair(): void;
  close(): void;
}

/**
 * A token file or token Secret deleted while running is written again from memory at once, and
 * checked again at every flush (repair()) in case a watch event was missed.
 */
export async function keepTokenFiles(state: StateFolder, log: Logger): Promise<TokenFiles> {
  const repair = (): void => {
    state.repairTokens().then(
      (files) => {
        for (const file of files) log.warn({ file }, 'Rewrote a token file that was deleted or changed');
      },
      (err: unknown) => log.error({ err }, 'Failed to rewrite token files'),
    );
  };
  const watcher = await watchFolders([join(state.dir, 'tokens'), join(state.dir, 'secrets')], repair, log);
  return { repair, close: () => watcher.close() };
}

/**
 * Writes one OPA configuration per bundle into <state-dir>/opa/ (and the public keys into opa/keys/)
 * now, at every bundle change and whenever the signing keys change; returns the unsubscribe.
 */
export async function keepOpaConfigs(
  state: StateFolder,
  store: Store,
  api: Listening,
  signing: SigningHolder,
  log: Logger,
): Promise<() => void> {
  const opaConfigs = createOpaConfigWriter({
    stateDir: state.dir,
    url: api.url,
    caFile: api.caFile,
    tokenFile: state.tokenFile,
    signing: signing.get,
  });
  const sync = (): void => {
    opaConfigs.sync(store.snapshot()).catch((err: unknown) => log.error({ err }, 'Failed to write the OPA configurations'));
  };
  await opaConfigs.sync(store.snapshot());
  const offBundles = store.onBundleChange(sync);
  const offKeys = signing.onChange(sync);
  return () => {
    offBundles();
    offKeys();
  };
}
