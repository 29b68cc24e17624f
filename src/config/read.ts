// Reads the flags' values: argv first, then each flag's environment variable, checked by the
// table's schema. Turning them into a Config is config.ts's part.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { FLAG_NAMES, FLAGS, flagLabel, Raw, type Flag, type FlagName, type RawValues } from './flags.ts';

export type FlagsResult = { ok: true; values: RawValues } | { ok: false; message: string } | { ok: 'help' };

/** parseArgs's options: a flag with an argument takes a string, a switch is a boolean; plus -h. */
function parseArgsOptions(): ParseArgsOptionsConfig {
  const options: ParseArgsOptionsConfig = {};
  for (const name of FLAG_NAMES) {
    const flag: Flag = FLAGS[name];
    options[name] = { type: flag.arg === undefined ? 'boolean' : 'string' };
  }
  options['help'] = { type: 'boolean', short: 'h' };
  return options;
}

const OPTIONS = parseArgsOptions();

/** What parseArgs found (an array only for `multiple` options, which no flag is). */
type Given = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** A flag given on the command line wins over its variable; an empty value counts as not given. */
function merge(given: Given, env: NodeJS.ProcessEnv): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const name of FLAG_NAMES) {
    const v = given[name] ?? env[FLAGS[name].env];
    if (v !== undefined && v !== '') merged[name] = v;
  }
  return merged;
}

/** The flags' validated values from argv and env, or -h, or a message naming each flag that is wrong. */
export function readFlags(argv: readonly string[], env: NodeJS.ProcessEnv): FlagsResult {
  let given: Given;
  try {
    ({ values: given } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  if (given['help']) return { ok: 'help' };
  const parsed = Raw.safeParse(merge(given, env));
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${flagLabel(String(i.path[0]) as FlagName)}: ${i.message}`);
    return { ok: false, message: issues.join('; ') };
  }
  return { ok: true, values: parsed.data };
}
