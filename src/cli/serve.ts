// `acl-operator [serve]`: starts the service and, for people at a terminal, says where everything
// is: listeners, token files, a decision and a bundle curl, and an OPA configuration per connector.
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import type { Config } from '../config.ts';
import { secretToken } from '../controller/index.ts';
import type { Service } from '../main.ts';

/** Marks an API key Secret whose key is public (examples/): the banner may print it. */
export const ANNOTATION_PUBLIC_EXAMPLE = 'acl.policyagent.dev/public-example';

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** OPA configuration (service spec 4.4) for one connector: bearer token_path, bundles, long polling. */
export function opaConfig(options: { url: string; caFile: string | undefined; tokenFile: string; tenant: string; connector: string; bundles: readonly string[] }): string {
  const service = `acl-${options.tenant}`;
  const doc = {
    services: {
      [service]: {
        url: options.url,
        ...(options.caFile ? { tls: { ca_cert: resolve(options.caFile) } } : {}),
        credentials: { bearer: { token_path: resolve(options.tokenFile) } },
      },
    },
    bundles: Object.fromEntries(options.bundles.map((b) => [b, {
      service,
      resource: `/${options.tenant}/connectors/policyagent/${options.connector}/bundles/${b}`,
      persist: true,
      polling: { min_delay_seconds: 10, max_delay_seconds: 30, long_polling_timeout_seconds: 60 },
    }])),
  };
  return stringify(doc);
}

/** Writes `<state>/opa/<tenant>-<connector>.yaml` for every connector and returns the banner text. */
export async function describeService(service: Service, config: Config): Promise<string> {
  const snapshot = service.store.snapshot();
  const curlTls = service.caFile ? `--cacert ${shellQuote(resolve(service.caFile))} ` : '';
  const lines: string[] = [];
  const tenants = [...snapshot.tenants.values()].sort((a, b) => (a.tenant < b.tenant ? -1 : 1));
  lines.push('', `acl-operator is serving ${tenants.length} tenant(s) from ${config.manifests ?? ''} (state in ${resolve(config.stateDir)})`);
  lines.push(`  API      ${service.apiUrl}${service.caFile ? `   (trust ${resolve(service.caFile)})` : '   (plain HTTP)'}`);
  lines.push(`  Ops      ${service.opsUrl}/metrics   ${service.opsUrl}/healthz   ${service.opsUrl}/readyz`);
  const problems = service.source.problems();
  if (problems.length > 0) lines.push(`  Problems ${problems.length} manifest document(s) skipped: see ${join(resolve(config.stateDir), 'problems.yaml')} or acl-operator status`);
  let bundleCurl: string | undefined;
  for (const t of tenants) {
    for (const c of [...t.connectors.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const bundles = [...t.bundles.values()].filter((b) => b.connector === c.name).map((b) => b.name).sort();
      const tokenFile = service.state.tokenFile(t.tenant, c.name);
      const opaFile = join(config.stateDir, 'opa', `${t.tenant}-${c.name}.yaml`);
      await mkdir(join(config.stateDir, 'opa'), { recursive: true });
      const opa = opaConfig({ url: service.apiUrl, caFile: service.caFile, tokenFile, tenant: t.tenant, connector: c.name, bundles });
      await writeFile(opaFile, opa);
      lines.push('', `Connector ${t.tenant}/${c.name} (${c.active ? 'Active' : 'Inactive'}), bundles: ${bundles.join(', ') || 'none'}`);
      lines.push(`  token file (OPA token_path)  ${resolve(tokenFile)}`);
      lines.push(`  OPA config                   opa run --server --config-file ${shellQuote(resolve(opaFile))}`);
      if (bundleCurl === undefined) lines.push(...opa.trimEnd().split('\n').map((l) => `    ${l}`));
      if (bundleCurl === undefined && bundles[0] !== undefined && c.active) {
        bundleCurl = `curl -sS ${curlTls}-D - -o bundle.tar.gz -H "Authorization: Bearer $(cat ${shellQuote(resolve(tokenFile))})" ${service.apiUrl}/${t.tenant}/connectors/policyagent/${c.name}/bundles/${bundles[0]}`;
      }
    }
  }
  // A decision example for the first tenant with an API key Secret in the manifests folder. The key
  // itself is printed only when its Secret says it is a public example: this text may end up in logs.
  let decisionCurl: string | undefined;
  let authzenCurl: string | undefined;
  for (const secret of service.source.list('Secret')) {
    const token = secretToken(secret.raw);
    const tenant = snapshot.tenants.get(secret.metadata.namespace);
    const rule = tenant?.index.rules[0];
    if (!token || !rule) continue;
    const key = secret.metadata.annotations?.[ANNOTATION_PUBLIC_EXAMPLE] === 'true' ? token : `<the token of Secret ${secret.metadata.namespace}/${secret.metadata.name}>`;
    const body = JSON.stringify({
      subject: { type: rule.model.subjectType, id: 'alice', properties: {} },
      action: rule.model.actions[0],
      resource: { type: rule.model.resourceType, id: 'example-1', properties: {} },
      context: {},
    });
    decisionCurl = `curl -sS ${curlTls}-H 'Content-Type: application/json' -H ${shellQuote(`Authorization: Bearer ${key}`)} -d ${shellQuote(body)} ${service.apiUrl}/authorization`;
    const authzenBody = JSON.stringify({
      subject: { type: rule.model.subjectType, id: 'alice' },
      action: { name: rule.model.actions[0] },
      resource: { type: rule.model.resourceType, id: 'example-1' },
    });
    authzenCurl = `curl -sS ${curlTls}-H 'Content-Type: application/json' -H ${shellQuote(`Authorization: Bearer ${key}`)} -d ${shellQuote(authzenBody)} ${service.apiUrl}/access/v1/evaluation`;
    break;
  }
  lines.push('', 'Try a decision (the reply says which rule decided, or what each candidate rule was missing):');
  lines.push(`  ${decisionCurl ?? '(add a Secret labelled acl.policyagent.dev/api-key: "true" with a token to the manifests folder)'}`);
  if (authzenCurl) lines.push('The same as an AuthZEN 1.0 evaluation (docs/authzen.md; metadata at /.well-known/authzen-configuration):', `  ${authzenCurl}`);
  lines.push('Fetch a bundle (add -H \'If-None-Match: "<etag>"\' to get 304 while it is unchanged):');
  lines.push(`  ${bundleCurl ?? '(no Active connector with a bundle)'}`);
  lines.push('Status like kubectl get:', `  acl-operator status --state-dir ${shellQuote(config.stateDir)}`, '');
  return lines.join('\n');
}
