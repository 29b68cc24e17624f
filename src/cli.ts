#!/usr/bin/env node
// Command line entry point: `serve` (the default) runs the service, `status` reads a standalone
// state folder, `render` prints what `serve` would serve for a folder of manifests (the offline pipeline),
// `lint` what is legal in it but almost certainly wrong, `test` decides test cases against it,
// `replay` decides recorded decisions (the decision log) against it, `rotate-key` starts a rotation of standalone's bundle signing key. Each
// command's modules load only when it runs: `test` and `lint` never load the Kubernetes client.

const USAGE = `Usage: acl-operator [command] [options]

Commands:
  serve    (default) Run the service: decisions, OPA bundles, metrics; see acl-operator serve --help
  status   Print the state folder of standalone mode as tables, like kubectl get
  render   Print the bundles (listing, .manifest and policy.rego) built from a folder of manifests
  lint     Print what is legal but almost certainly wrong in a folder of manifests (docs/testing.md)
  test     Decide the cases of test files (*.test.yaml) against a folder of manifests, natively and in OPA
  replay   Decide recorded decisions (the decision log) again against a folder of manifests: what would flip
  rotate-key  Start a rotation of the bundle signing key of a standalone state folder (docs/opa.md#signed-bundles)

Options of render:
  --manifests <dir>   Folder of YAML manifests (Rule, Connector, Bundle); read recursively
                      (default: $ACL_MANIFESTS)
  --out <dir>         Also write each bundle to <dir>/<tenant>/<bundle>.tar.gz, e.g. for opa eval -b
  --no-rego           Print the listing only, not the file contents

Options of lint:
  --manifests <dir>   Folder of YAML manifests, read recursively (default: $ACL_MANIFESTS)
  --strict            Exit with status 1 when there are findings (for CI)
  --format <f>        text (default: one line per finding and a count) or json

Options of test (docs/testing.md):
  --manifests <dir>   Folder of YAML manifests, built as serve would (default: $ACL_MANIFESTS); its
                      *.test.yaml / *.test.yml files are the test files unless --tests is given
  --tests <path>      A test file, or a folder searched recursively for test files
  --opa <binary>      Also decide every case with this OPA on the bundles its tenant serves
                      (default: $OPA_BIN)
  --format <format>   text (default), junit, tap or json
  --out <file>        Write the report to <file> instead of stdout

Options of replay (docs/testing.md#replay):
  --manifests <dir>   The candidate folder of YAML manifests, built as serve would (default: $ACL_MANIFESTS)
  --decisions <path>  The decision log: a file (plain or gzip), a folder of rotated files (read oldest
                      first) or - for stdin; may repeat
  --opa <binary>      Also decide every replayed decision with this OPA on the candidate's bundles
                      (default: $OPA_BIN)
  --format <format>   text (default), json, junit or markdown (a pull-request comment)
  --out <file>        Write the report to <file> instead of stdout
  --max-flips <n>     Flips allowed before the exit status is 1 (default 0)
  --allow-direction deny-to-allow
                      deny → allow flips do not count against --max-flips (only allow → deny do)
  --since <t>, --until <t>
                      Replay only decisions made at or after --since and before --until: an RFC 3339
                      time (2026-11-24T10:00:00Z) or a duration back from now (30m, 24h, 7d)

Options of status:
  --state-dir <dir>   The state folder of a standalone service (default: $ACL_STATE_DIR or .acl-state)
  --rule <ns/name>    One rule: phase, conditions and its Rego translation
  --bundle <ns/name>  One bundle: revision, digest and its sync activity

Options of rotate-key:
  --state-dir <dir>   The state folder of a standalone service (default: $ACL_STATE_DIR or .acl-state):
                      signing/current.pem becomes signing/previous.pem, a new key signing/current.pem

  -h, --help          Show this help

Exit status of render: 0 when every manifest was used, 1 when some were reported as problems, 2 on bad usage.
Exit status of lint: 0 (1 with --strict when there are findings), 2 on bad usage or manifests reported as problems.
Exit status of test: 0 when every case passed, 1 on a failed case or a disagreement with OPA, 2 on bad
usage, manifests with problems, test files with errors (or none found), or an OPA that does not run.
Exit status of replay: 0 when no more decisions flipped than --max-flips allows, 1 when more did or
(with --opa) OPA decided a replayed input otherwise than the native replay, 2 on bad usage, an
unreadable --decisions path, manifests with problems, or an OPA that does not run.
Exit status of rotate-key: 0 when a rotation started, 2 when refused (a rotation already runs, no key or a
broken key in the folder) or on bad usage.
`;

/**
 * A reader that stops early (`acl-operator replay ... | head`) closes the pipe: the rest of the output
 * is not wanted, and the command still ends with its own exit status, without a stack trace. Not for
 * serve, whose stdout is its log.
 */
function ignoreClosedStdout(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
  });
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== undefined && command !== 'serve' && !command.startsWith('-')) ignoreClosedStdout();
  try {
    switch (command) {
      case 'render':
        return await (await import('./cli/render.ts')).renderCommand(rest, USAGE);
      case 'lint':
        return await (await import('./cli/lint.ts')).lint(rest, USAGE);
      case 'status':
        return await (await import('./cli/status.ts')).statusCommand(rest, USAGE);
      case 'test':
        return await (await import('./cli/test.ts')).testCommand(rest, USAGE);
      case 'replay':
        return await (await import('./cli/replay.ts')).replayCommand(rest, USAGE);
      case 'rotate-key':
        return await (await import('./cli/rotate-key.ts')).rotateKeyCommand(rest, USAGE);
      case 'serve':
        return await (await import('./cli/serve.ts')).serveCommand(rest);
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(USAGE);
        return 0;
      default:
        if (command === undefined || command.startsWith('-')) return await (await import('./cli/serve.ts')).serveCommand(argv);
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
