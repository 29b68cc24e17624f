// `acl-operator rotate-key [--state-dir <dir>]`: starts a rotation of standalone's bundle signing key
// (docs/opa.md#signed-bundles): the current key becomes signing/previous.pem, a new one
// signing/current.pem. A running serve notices within 2 s; with none running, the next start reads both.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { commandDefaults } from '../config.ts';
import { generateSigningKeyPem } from '../signing/index.ts';
import { rotateSigningKey } from '../standalone/index.ts';

/** Runs the command; the exit status (0 rotated, 2 refused or bad usage). */
export async function rotateKeyCommand(argv: string[], usage: string): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { 'state-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const dir = values['state-dir'] ?? commandDefaults(process.env).stateDir;
  const rotation = await rotateSigningKey(dir, generateSigningKeyPem);
  if (!rotation.ok) {
    process.stderr.write(`acl-operator rotate-key: ${rotation.message}\n`);
    return 2;
  }
  const { current, previous } = rotation;
  const opa = resolve(join(dir, 'opa'));
  process.stdout.write(
    [
      `Started a rotation of the bundle signing key in ${resolve(dir)}:`,
      `  new key       ${current.kid}  (signing/current.pem: signs every new bundle revision)`,
      `  previous key  ${previous.kid}  (signing/previous.pem: still signs for the OPAs configured with it)`,
      '',
      'Next:',
      `  1. acl-operator serve picks the new key up within 2 s (or at its next start) and rewrites the OPA`,
      `     configurations in ${opa} pinned to ${current.kid}. OPAs started before keep deciding and`,
      `     keep getting bundles signed with ${previous.kid}.`,
      `  2. Restart each OPA with its rewritten configuration (opa run --server --config-file ${opa}/<tenant>/<bundle>.yaml).`,
      `  3. Once every agent of every bundle reports ${current.kid} (acl-operator status --state-dir ${dir} --bundle <tenant>/<bundle>),`,
      '     serve deletes signing/previous.pem by itself: the rotation is over.',
      '',
    ].join('\n'),
  );
  return 0;
}
