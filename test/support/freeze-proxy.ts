// A TCP relay in front of the API server that can "freeze" (connections stay open but
// no byte moves: a black-holed network path), and a fresh operator config.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_KUBE, type Config } from '../../src/config.ts';
import { loadConfig } from './kube.ts';

export interface FreezeProxy { readonly kubeConfig: KubeConfig; freeze(): void; close(): void }

export async function startFreezeProxy(): Promise<FreezeProxy> {
  const kc = loadConfig();
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no cluster');
  const target = new URL(cluster.server);
  const sockets = new Set<Socket>();
  let frozen = false;
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('error', () => undefined);
    if (frozen) return; // accepted, never answered
    const upstream = connect(Number(target.port || 443), target.hostname);
    sockets.add(upstream);
    upstream.on('error', () => undefined);
    client.on('data', (d) => { if (!frozen) upstream.write(d); });
    upstream.on('data', (d) => { if (!frozen) client.write(d); });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const proxied = new KubeConfig();
  proxied.loadFromOptions({
    clusters: kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server: `${target.protocol}//127.0.0.1:${port}` } : c)),
    users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext,
  });
  return {
    kubeConfig: proxied,
    freeze() { frozen = true; },
    close() { for (const s of sockets) s.destroy(); server.close(); },
  };
}

export function operatorConfig(namespace: string, identity: string, extra: Partial<Config> = {}): Config {
  return {
    manifests: undefined,
    stateDir: join(tmpdir(), 'acl-operator-e2e', namespace, identity),
    listen: { host: '127.0.0.1', port: 0 },
    opsListen: { host: '127.0.0.1', port: 0 },
    tls: { mode: 'insecure' },
    maxBodyBytes: 1024 * 1024,
    maxLongPollSeconds: 120,
    logLevel: 'silent',
    kube: { ...DEFAULT_KUBE, namespaces: [namespace], operatorNamespace: namespace, identity },
    ...extra,
  };
}
