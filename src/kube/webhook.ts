// The caBundle of the operator's ValidatingWebhookConfiguration (--webhook-config), kept equal to the
// CA the API listener serves with, as the token Secrets' ca.crt is: the API server calls the webhook
// over TLS and trusts only that bundle. The leader writes it when it starts leading, when the TLS
// Secret's CA changes and at every resync, and only where it differs. A configuration annotated
// cert-manager.io/inject-ca-from belongs to cert-manager's CA injector and is left alone.
import { AdmissionregistrationV1Api, type V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeError, type KubeClients, statusOf } from './client.ts';

export const ANNOTATION_INJECT_CA_FROM = 'cert-manager.io/inject-ca-from';

/** The two calls the upkeep makes (AdmissionregistrationV1Api's; tests pass a fake). */
export interface WebhookApi {
  readValidatingWebhookConfiguration(param: { name: string }): Promise<V1ValidatingWebhookConfiguration>;
  /** A JSON patch (RFC 6902): client-node sends application/json-patch+json, the first type it offers. */
  patchValidatingWebhookConfiguration(param: { name: string; body: object }): Promise<V1ValidatingWebhookConfiguration>;
}

export function webhookApi(clients: KubeClients): WebhookApi {
  return clients.config.makeApiClient(AdmissionregistrationV1Api);
}

export interface WebhookCaOptions {
  readonly api: WebhookApi;
  /** The ValidatingWebhookConfiguration's name. */
  readonly name: string;
  /** The CA (PEM) the API listener serves with now. */
  readonly ca: () => string | undefined;
  readonly log: Logger;
}

export interface WebhookCa {
  /** Writes the CA into every webhook of the configuration whose caBundle differs; failures are logged, never thrown. */
  sync(): Promise<void>;
}

/** What the last sync found, so a state is logged once, not at every resync. */
type Seen = 'current' | 'written' | 'missing' | 'injected' | 'failed';

/** RFC 6902 operations: per stale webhook, a test of its name (the list may change meanwhile) and the new bundle. */
function patchFor(configuration: V1ValidatingWebhookConfiguration, bundle: string): { ops: object[]; names: string[] } {
  const ops: object[] = [];
  const names: string[] = [];
  (configuration.webhooks ?? []).forEach((w, i) => {
    if (w.clientConfig.caBundle === bundle) return;
    names.push(w.name);
    ops.push({ op: 'test', path: `/webhooks/${i}/name`, value: w.name });
    ops.push({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: bundle });
  });
  return { ops, names };
}

function hintFor(err: unknown, name: string): { hint?: string } {
  const status = statusOf(err);
  if (status === 403)
    return { hint: `forbidden: RBAC must allow get and patch on validatingwebhookconfigurations named ${name} (deploy/60-webhook.yaml)` };
  if (status === 422) return { hint: 'the configuration changed while it was patched; the next resync writes it again' };
  return {};
}

/** Keeps one configuration's caBundle; syncs run one at a time. */
export function createWebhookCa(o: WebhookCaOptions): WebhookCa {
  let last: Seen | undefined;
  let chain: Promise<void> = Promise.resolve();
  const log = o.log.child({ configuration: o.name });
  const saw = (seen: Seen, say: () => void): void => {
    if (seen !== last) say();
    last = seen;
  };

  async function syncOnce(): Promise<void> {
    const ca = o.ca();
    if (ca === undefined) return;
    const bundle = Buffer.from(ca, 'utf8').toString('base64');
    let current: V1ValidatingWebhookConfiguration;
    try {
      current = await o.api.readValidatingWebhookConfiguration({ name: o.name });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      saw('missing', () => log.info('No ValidatingWebhookConfiguration of that name: no caBundle to keep'));
      return;
    }
    if (current.metadata?.annotations?.[ANNOTATION_INJECT_CA_FROM] !== undefined) {
      saw('injected', () =>
        log.info({ annotation: ANNOTATION_INJECT_CA_FROM }, "Left the webhook's caBundle to cert-manager's CA injector"),
      );
      return;
    }
    const { ops, names } = patchFor(current, bundle);
    if (ops.length === 0) {
      saw('current', () => log.debug("The webhook's caBundle is the serving CA"));
      return;
    }
    await o.api.patchValidatingWebhookConfiguration({ name: o.name, body: ops });
    last = 'written';
    log.info({ webhooks: names }, "Wrote the serving CA into the webhook's caBundle");
  }

  return {
    sync() {
      chain = chain.then(syncOnce).catch((err: unknown) => {
        last = 'failed';
        log.error({ err: describeError(err), ...hintFor(err, o.name) }, "Failed to keep the webhook's caBundle");
      });
      return chain;
    },
  };
}
