// GET /{tenant}/connectors/policyagent/{connector}/bundles/{bundle} (service spec 4.2, 5, 7.2):
// the connector token opens only its own connector's bundles; ETag / If-None-Match → 304; with
// `Prefer: wait=N` a request whose ETag is current is held until the bundle changes or N seconds pass.
// `?key=<kid>` names the key the OPA verifies with (its configuration pins it): the archive signed by
// that key is served, each archive with its own ETag (docs/opa.md, "Signed bundles").
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import type { BundleArchive, BuiltBundle } from '../bundle/index.ts';
import { bundleKey, type BundleEntry, type Snapshot } from '../store/index.ts';
import { judgeConnector } from './connector.ts';
import { createBundleReadHandler } from './reads.ts';
import type { ApiDeps } from './deps.ts';
import { sendError, STATUS, WWW_AUTHENTICATE, type FailureCode } from './errors.ts';
import { preferWait } from './longpoll.ts';
import { createUnrecorded } from './unrecorded.ts';

/** OPA switches to long polling only when it sees exactly this type, on 200 and on 304. */
export const BUNDLE_CONTENT_TYPE = 'application/vnd.openpolicyagent.bundles';

export interface BundlePath {
  readonly tenant: string;
  readonly connector: string;
  readonly bundle: string;
  /** `?key=`: the kid of the key the OPA verifies with; undefined: the current key's archive. */
  readonly key?: string | undefined;
}

/** The `key` query parameter of a request URL; undefined when there is none (the URL is parsed only if it has a query). */
export function queryKey(url: string): string | undefined {
  const q = url.indexOf('?');
  if (q < 0) return undefined;
  return new URLSearchParams(url.slice(q + 1)).get('key') ?? undefined;
}

/** The archive of a revision signed by `key` (the current key's when undefined); undefined when no key of that id signs it. */
export function archiveFor(built: BuiltBundle, key: string | undefined): BundleArchive | undefined {
  if (key === undefined || key === built.kid) return built;
  return key === built.previous?.kid ? built.previous : undefined;
}

/** The 404 of a key that signs no archive of this bundle, naming the keys that do. */
function unknownKeyMessage(bundle: string, built: BuiltBundle, key: string): string {
  const asked = JSON.stringify(key.slice(0, 64));
  if (built.kid === undefined) return `bundle ${bundle} is served unsigned (--unsigned-bundles), not signed by key ${asked}`;
  const kids = [built.kid, ...(built.previous ? [built.previous.kid] : [])];
  return `bundle ${bundle} is not signed by key ${asked}; the keys that sign it are ${kids.join(' and ')} (the OPA configuration names a retired key: take the current one)`;
}

type Verdict =
  /**
   * `rotated`: the token was this connector's until a rotation (it now has another, and is Active).
   * `own`: the token is the current one of the bundle's connector (an Inactive connector's 403).
   */
  | {
      readonly code: FailureCode;
      readonly message: string;
      readonly bundle: BundleEntry | undefined;
      readonly rotated?: boolean;
      readonly own?: boolean;
    }
  | { readonly code: 'ok'; readonly bundle: BundleEntry };

/** Weak comparison (RFC 9110 13.1.2): `*`, or any listed tag equal to ours with W/ ignored. */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const ours = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === ours);
}

function judge(snapshot: Snapshot, path: BundlePath, authorization: string | undefined): Verdict {
  const existing = snapshot.tenants.get(path.tenant)?.bundles.get(path.bundle);
  const verdict = judgeConnector(snapshot, path, authorization);
  if (verdict.code === 'unauthenticated') {
    const rotated = verdict.retired !== undefined && verdict.retired.tokenHash !== undefined && verdict.retired.active;
    return { code: verdict.code, message: verdict.message, bundle: existing, rotated };
  }
  if (verdict.code === 'forbidden')
    return { code: verdict.code, message: verdict.message, bundle: existing, own: existing?.connector === path.connector };
  if (verdict.code !== 'ok') return { code: verdict.code, message: verdict.message, bundle: existing };
  if (!existing || existing.connector !== path.connector) {
    return { code: 'not_found', message: `connector ${path.connector} has no bundle ${path.bundle}`, bundle: existing };
  }
  return { code: 'ok', bundle: existing };
}

/** Serves one bundle request; the path's names are already decoded. */
export function createBundleHandler(deps: ApiDeps): (req: IncomingMessage, res: ServerResponse, path: BundlePath) => void {
  // Requests that did not authenticate as the bundle's connector stay out of its sync activity.
  const unrecorded = createUnrecorded(
    deps,
    (status) => deps.metrics.bundleRequestsUnrecorded.labels(String(status)).inc(),
    'Refused bundle requests (not recorded in sync activity)',
  );

  return function serveBundle(req, res, path) {
    const key = bundleKey(path.tenant, path.bundle);

    /** `own`: the request authenticated as the bundle's connector, so it enters the sync activity. */
    const finish = (status: number, bundle: BundleEntry | undefined, own: boolean): void => {
      deps.metrics.bundleRequests.labels(String(status)).inc();
      if (!own || !bundle) {
        unrecorded(status, { tenant: path.tenant, connector: path.connector, bundle: path.bundle }, req);
        return;
      }
      deps.store.activity.record(key, {
        timeMs: deps.now(),
        revision: bundle.built.revision,
        clientIp: req.socket.remoteAddress ?? '',
        userAgent: (req.headers['user-agent'] ?? '').slice(0, 256),
        status,
      });
      if (deps.log.isLevelEnabled('debug'))
        deps.log.debug({ tenant: path.tenant, connector: path.connector, bundle: path.bundle, status }, 'Served bundle request');
    };

    const respond = (mayHold: boolean): void => {
      const verdict = judge(deps.store.snapshot(), path, req.headers.authorization);
      // A held request whose token was rotated meanwhile, for a bundle that did not change: 304, so
      // OPA asks again at once with the token its token_path holds now (the new one is held again,
      // the old one gets 401 at once). A 401 here would make every sidecar report failing until its
      // next poll, up to long_polling_timeout_seconds later, even those already given the new token.
      const rotatedArchive =
        !mayHold && verdict.code === 'unauthenticated' && verdict.rotated && verdict.bundle?.connector === path.connector
          ? archiveFor(verdict.bundle.built, path.key)
          : undefined;
      if (rotatedArchive && noneMatch(req.headers['if-none-match'], rotatedArchive.etag)) {
        res.writeHead(304, { ETag: rotatedArchive.etag, 'Content-Type': BUNDLE_CONTENT_TYPE, 'Cache-Control': 'no-cache' });
        res.end();
        finish(304, verdict.bundle, true);
        return;
      }
      if (verdict.code !== 'ok') {
        sendError(res, verdict.code, verdict.message, verdict.code === 'unauthenticated' ? { 'WWW-Authenticate': WWW_AUTHENTICATE } : {});
        finish(STATUS[verdict.code], verdict.bundle, verdict.own === true);
        return;
      }
      const built = archiveFor(verdict.bundle.built, path.key);
      if (built === undefined) {
        // Its own connector's OPA, pinned to a key that no longer signs: recorded in the sync activity.
        sendError(res, 'not_found', unknownKeyMessage(path.bundle, verdict.bundle.built, path.key as string));
        finish(404, verdict.bundle, true);
        return;
      }
      if (noneMatch(req.headers['if-none-match'], built.etag)) {
        const prefer = req.headers['prefer'];
        const wait = mayHold ? preferWait(Array.isArray(prefer) ? prefer.join(', ') : prefer) : undefined;
        if (wait !== undefined) {
          const answer = (): void => {
            if (!res.writableEnded && !res.destroyed) respond(false);
          };
          const cancel = deps.longPolls.hold(key, Math.min(wait, deps.maxWaitSeconds) * 1000, answer);
          // The listener keeps a connection its client half-closes (listeners.ts); a client that closes
          // while held has gone, or still reads: either way it is answered now, as at the deadline.
          const closed = (): void => {
            cancel();
            answer();
          };
          req.socket.once('end', closed);
          res.on('close', () => {
            cancel();
            req.socket.off('end', closed);
          });
          return;
        }
        res.writeHead(304, { ETag: built.etag, 'Content-Type': BUNDLE_CONTENT_TYPE, 'Cache-Control': 'no-cache' });
        res.end();
        finish(304, verdict.bundle, true);
        return;
      }
      res.writeHead(200, {
        ETag: built.etag,
        'Content-Type': BUNDLE_CONTENT_TYPE,
        'Content-Length': built.bytes.length,
        'Cache-Control': 'no-cache',
      });
      res.end(built.bytes);
      finish(200, verdict.bundle, true);
    };
    respond(true);
  };
}

/** GET .../bundles/{bundle}/activity with the tenant's API key: the bundle's sync activity. */
export function createActivityHandler(deps: ApiDeps): (req: Request, res: Response) => void {
  return createBundleReadHandler(deps, (path, bundle) => {
    const key = bundleKey(path.tenant, bundle.name);
    return { etag: bundle.built.etag, lastSync: deps.store.activity.lastSync(key) ?? null, records: deps.store.activity.list(key) };
  });
}
