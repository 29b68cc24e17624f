// What `acl-operator [serve]` prints for people at a terminal once the service serves: listeners,
// token files, lint findings, a decision and a bundle curl, and the OPA configuration of each bundle.
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Config } from '../config.ts';
import { secretToken } from '../controller/index.ts';
import { AUTHZEN_ENDPOINTS, AUTHZEN_METADATA_PATH } from '../authzen/index.ts';
import { formatFinding } from '../lint/index.ts';
import type { Service } from '../modes/index.ts';
import { opaConfigFile, signingKeyFiles } from '../standalone/index.ts';
import { countFindings, findingsOf } from './findings.ts';

/** Marks an API key Secret whose key is public (examples/): the banner may print it. */
export const ANNOTATION_PUBLIC_EXAMPLE = 'acl.policyagent.dev/public-example';

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Findings shown in the banner; `acl-operator lint` prints them all. */
const BANNER_FINDINGS = 5;

/** The banner's lint lines: the count, the command that prints every finding, and the first few. */
function lintLines(service: Service, config: Config): string[] {
  const findings = findingsOf(service.state.objects());
  if (findings.length === 0) return [];
  const more = findings.length - BANNER_FINDINGS;
  return [
    `  Lint     ${countFindings(findings.length)} (each with its fix: acl-operator lint --manifests ${shellQuote(config.manifests ?? '')}); later ones are logged`,
    ...findings.slice(0, BANNER_FINDINGS).map((f) => `    - ${formatFinding(f)}`),
    ...(more > 0 ? [`    - and ${more} more`] : []),
  ];
}

function consoleLines(service: Service): string[] {
  const { url, adminKeyFile } = service.console;
  if (url === undefined) return [];
  return [`  Console  ${url}   (sign in with the admin key: cat ${shellQuote(resolve(adminKeyFile))}, or a tenant's API key)`];
}

/** Which key signs bundles (and the rotation running), or that they are unsigned. */
function signingLines(service: Service, config: Config): string[] {
  const s = service.signing.get();
  if (s.unsigned) return ['  Signing  off (--unsigned-bundles): bundles are served unsigned and OPAs verify nothing'];
  if (!s.ring) return [];
  const { current, previous } = s.ring;
  return [
    `  Signing  bundles signed with key ${current.kid} (${resolve(signingKeyFiles(config.stateDir).current)})`,
    previous
      ? `           rotating from ${previous.kid}: retired once every agent reports ${current.kid} (docs/opa.md#signed-bundles)`
      : `           rotate it: acl-operator rotate-key --state-dir ${shellQuote(config.stateDir)} (docs/opa.md#signed-bundles)`,
  ];
}

/** The banner: listeners, token files, one OPA configuration per bundle, and commands to paste. */
export async function describeService(service: Service, config: Config): Promise<string> {
  const snapshot = service.store.snapshot();
  const curlTls = service.caFile ? `--cacert ${shellQuote(resolve(service.caFile))} ` : '';
  const lines: string[] = [];
  const tenants = [...snapshot.tenants.values()].sort((a, b) => (a.tenant < b.tenant ? -1 : 1));
  lines.push(
    '',
    `acl-operator is serving ${tenants.length} tenant(s) from ${config.manifests ?? ''} (state in ${resolve(config.stateDir)})`,
  );
  lines.push(`  API      ${service.apiUrl}${service.caFile ? `   (trust ${resolve(service.caFile)})` : '   (plain HTTP)'}`);
  lines.push(`  Ops      ${service.opsUrl}/metrics   ${service.opsUrl}/healthz   ${service.opsUrl}/readyz`);
  lines.push(...consoleLines(service));
  lines.push(...signingLines(service, config));
  const problems = service.source.problems();
  if (problems.length > 0)
    lines.push(
      `  Problems ${problems.length} manifest document(s) skipped: see ${join(resolve(config.stateDir), 'problems.yaml')} or acl-operator status`,
    );
  lines.push(...lintLines(service, config));
  lines.push(
    '',
    'One OPA per bundle: every bundle has roots ["acl"], so an OPA given two of them activates one and refuses',
    'the other. Each bundle below has its own configuration (status and decision logs report back here).',
  );
  let bundleCurl: string | undefined;
  let shown = false;
  for (const t of tenants) {
    for (const c of [...t.connectors.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const bundles = [...t.bundles.values()]
        .filter((b) => b.connector === c.name)
        .map((b) => b.name)
        .sort();
      const tokenFile = service.state.tokenFile(t.tenant, c.name);
      lines.push('', `Connector ${t.tenant}/${c.name} (${c.active ? 'Active' : 'Inactive'}), ${bundles.length} bundle(s)`);
      lines.push(`  token file (OPA token_path)  ${resolve(tokenFile)}`);
      for (const b of bundles) {
        const opaFile = resolve(opaConfigFile(config.stateDir, t.tenant, b));
        lines.push(`  bundle ${b}: opa run --server --config-file ${shellQuote(opaFile)}`);
        if (!shown) {
          shown = true;
          const text = await readFile(opaFile, 'utf8').catch(() => '');
          lines.push(
            ...text
              .trimEnd()
              .split('\n')
              .filter((l) => !l.startsWith('#'))
              .map((l) => `    ${l}`),
          );
        }
      }
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
    const key =
      secret.metadata.annotations?.[ANNOTATION_PUBLIC_EXAMPLE] === 'true'
        ? token
        : `<the token of Secret ${secret.metadata.namespace}/${secret.metadata.name}>`;
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
    authzenCurl = `curl -sS ${curlTls}-H 'Content-Type: application/json' -H ${shellQuote(`Authorization: Bearer ${key}`)} -d ${shellQuote(authzenBody)} ${service.apiUrl}${AUTHZEN_ENDPOINTS.evaluation.path}`;
    break;
  }
  lines.push('', 'Try a decision (the reply says which rule decided, or what each candidate rule was missing):');
  lines.push(`  ${decisionCurl ?? '(add a Secret labelled acl.policyagent.dev/api-key: "true" with a token to the manifests folder)'}`);
  if (authzenCurl)
    lines.push(`The same as an AuthZEN 1.0 evaluation (docs/authzen.md; metadata at ${AUTHZEN_METADATA_PATH}):`, `  ${authzenCurl}`);
  lines.push('Fetch a bundle (add -H \'If-None-Match: "<etag>"\' to get 304 while it is unchanged):');
  lines.push(`  ${bundleCurl ?? '(no Active connector with a bundle)'}`);
  lines.push('Status like kubectl get:', `  acl-operator status --state-dir ${shellQuote(config.stateDir)}`, '');
  return lines.join('\n');
}
