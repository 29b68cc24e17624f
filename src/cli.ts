#!/usr/bin/env node
// Command line entry point. The service (standalone and Kubernetes modes) arrives in later issues;
// today it offers `render`, which prints what the operator would serve for a folder of manifests.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatRender, renderManifests } from './cli/render.ts';
import { readManifestFolder } from './standalone/folder.ts';

const USAGE = `Usage: acl-operator <command> [options]

Commands:
  render   Print the bundles (listing, .manifest and policy.rego) built from a folder of manifests

Options of render:
  --manifests <dir>   Folder of YAML manifests (Rule, Connector, Bundle); read recursively
                      (default: $ACL_MANIFESTS)
  --out <dir>         Also write each bundle to <dir>/<tenant>/<bundle>.tar.gz, e.g. for opa eval -b
  --no-rego           Print the listing only, not the file contents
  -h, --help          Show this help

Exit status: 0 when every manifest was used, 1 when some were reported as problems, 2 on bad usage.
`;

async function render(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { manifests: { type: 'string' }, out: { type: 'string' }, 'no-rego': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) { process.stdout.write(USAGE); return 0; }
  const dir = values.manifests ?? process.env['ACL_MANIFESTS'];
  if (!dir) { process.stderr.write(`render needs --manifests <dir> (or ACL_MANIFESTS)\n\n${USAGE}`); return 2; }
  let folder: Awaited<ReturnType<typeof readManifestFolder>>;
  try {
    folder = await readManifestFolder(dir);
  } catch (err) {
    process.stderr.write(`cannot read manifests from ${dir}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  if (folder.files.length === 0) { process.stderr.write(`no .yaml or .yml files in ${dir}\n`); return 1; }
  process.stderr.write(`Read ${folder.files.length} file(s) from ${dir}\n`);
  const result = await renderManifests(folder.manifests, folder.errors);
  process.stdout.write(formatRender(result, { rego: !values['no-rego'] }));
  if (values.out) {
    for (const b of result.bundles) {
      const target = join(values.out, b.tenant, `${b.name}.tar.gz`);
      await mkdir(join(values.out, b.tenant), { recursive: true });
      await writeFile(target, b.built.bytes);
      process.stderr.write(`Wrote ${target}\n`);
    }
  }
  return result.problems.length > 0 ? 1 : 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'render': return await render(rest);
      case undefined: case '-h': case '--help': case 'help':
        process.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    // parseArgs reports unknown or malformed options by throwing.
    if (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`${err.message}\n\n${USAGE}`);
      return 2;
    }
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
