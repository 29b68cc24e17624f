// Listeners: the API over HTTPS (certificate files reloaded when they change, or a generated
// self-signed localhost certificate) or, when explicitly allowed, plain HTTP; the ops port in HTTP.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createSecureContext } from 'node:tls';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { Address, Tls } from '../config.ts';
import { ensureSelfSigned } from '../tls/index.ts';
import { type Drainer, trackConnections } from './drain.ts';

export interface Listening {
  readonly server: Server | HttpsServer;
  readonly url: string;
  /** The certificate file clients should trust (self-signed or given), when TLS is on. */
  readonly caFile: string | undefined;
  close(): void;
}

/** The API listener, which closes by draining its connections (drain.ts). */
export interface ApiListening extends Listening {
  readonly drainer: Drainer;
}

function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

function listen(server: Server | HttpsServer, address: Address): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : address.port);
    });
  });
}

export interface ApiListenOptions {
  readonly address: Address;
  readonly tls: Tls;
  readonly stateDir: string;
  readonly log: Logger;
  /** Held long polls must outlive the request timeout. */
  readonly requestTimeoutMs: number;
  /** The service's clock: when a generated certificate starts, and whether it is due for renewal. */
  readonly now: () => Date;
}

/** Starts the API listener; TLS files are watched and reloaded, a bad new pair is logged and ignored. */
export async function listenApi(app: RequestListener, options: ApiListenOptions): Promise<ApiListening> {
  const { tls, log } = options;
  let server: Server | HttpsServer;
  let watcher: FSWatcher | undefined;
  let caFile: string | undefined;
  if (tls.mode === 'insecure') {
    server = createHttpServer(app);
    log.warn(
      { listen: `${options.address.host}:${options.address.port}` },
      'Serving the API over plain HTTP: tokens and API keys cross the network in clear text; use only on localhost',
    );
  } else {
    if (tls.mode === 'secret') throw new Error('listenApi needs the TLS Secret written to files first (Kubernetes mode does it)');
    const files = tls.mode === 'files' ? tls : await ensureSelfSigned(join(options.stateDir, 'tls'), log, options.now());
    caFile = files.cert;
    const read = async () => ({ cert: await readFile(files.cert), key: await readFile(files.key) });
    const https = createHttpsServer({ ...(await read()) }, app);
    server = https;
    if (tls.mode === 'files') {
      let timer: NodeJS.Timeout | undefined;
      // Kubernetes updates mounted Secrets by swapping a symlink in the folder, so the folder is watched.
      watcher = watch(dirname(files.cert), () => {
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => {
          read()
            .then((pair) => {
              createSecureContext(pair); // throws on a mismatched or broken pair
              https.setSecureContext(pair);
              log.info({ cert: basename(files.cert) }, 'Reloaded the TLS certificate');
            })
            .catch((err: unknown) => log.error({ err, cert: files.cert }, 'Kept the previous TLS certificate: the new files do not load'));
        }, 200);
      });
    }
  }
  server.requestTimeout = options.requestTimeoutMs;
  // A client that half-closes after its request still gets the answer (RFC 9112 9.6: a half-close
  // does not say it lost interest). Node otherwise ends the connection at the client's FIN, losing
  // every answer not written in the same turn: OPA's uploads are answered after the uploads thread.
  (server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  server.headersTimeout = 30_000;
  server.keepAliveTimeout = 65_000;
  const drainer = trackConnections(server);
  const port = await listen(server, options.address);
  const scheme = tls.mode === 'insecure' ? 'http' : 'https';
  return {
    server,
    url: `${scheme}://${hostForUrl(options.address.host)}:${port}`,
    caFile,
    drainer,
    close: () => {
      watcher?.close();
    },
  };
}

export async function listenOps(app: RequestListener, address: Address): Promise<Listening> {
  const server = createHttpServer(app);
  const port = await listen(server, address);
  return { server, url: `http://${hostForUrl(address.host)}:${port}`, caFile: undefined, close: () => undefined };
}
