// A byte scan of an upload's JSON before it is parsed, as it is inflated: how deep it nests and how
// many arrays and objects it holds. JSON.parse of 4 MiB nested two million deep takes half a second
// and hundreds of megabytes; the scan refuses it within its first 10 KB, allocating nothing.

/**
 * Deepest nesting an upload may have. OPA reads its inputs with Go's encoding/json, which refuses
 * input nested deeper than 10,000 levels, and an upload wraps each input in two more (its array and
 * the event); OPA's status reports nest a few levels.
 */
export const MAX_UPLOAD_DEPTH = 10_002;

/**
 * Arrays and objects an upload may hold: one per this many bytes of --max-upload-bytes. Real uploads
 * hold one per 50 to 100 bytes (OPA 1.1's status report one per 87), and each costs JSON.parse about
 * 60 bytes of memory, so this bounds what parsing an upload may take.
 */
export const BYTES_PER_CONTAINER = 16;
/** ...and never fewer than this many (4 MiB of memory at most): a small limit still lets an input nest as deep as OPA's. */
export const MIN_CONTAINERS = 65_536;

export type ScanProblem = { readonly code: 'bad_request' | 'too_large'; readonly message: string };

export interface JsonScanner {
  /** Scans the next bytes of the text; the problem once there is one (then stop). */
  push(bytes: Uint8Array): ScanProblem | undefined;
  /**
   * Whether the text so far holds a number a double may not hold as written (16 or more digits and
   * dots, or an exponent): only then must it be parsed keeping numbers (fleet/json.ts), slower.
   */
  inexact(): boolean;
}

/** Digits and dots of a number token from which a double may not hold it as written. */
const INEXACT_RUN = 16;

interface ScanState {
  depth: number;
  containers: number;
  inString: boolean;
  /** Inside a string, the last piece ended with an escaping backslash. */
  escaped: boolean;
  /** Digits and dots of the number token being read (0 outside one). */
  run: number;
  inexact: boolean;
}

const tooDeep = (maxDepth: number): ScanProblem => ({
  code: 'bad_request',
  message: `the upload is nested deeper than ${maxDepth} levels, which OPA never sends (its JSON decoder refuses more than 10000)`,
});
const tooMany = (maxContainers: number): ScanProblem => ({
  code: 'too_large',
  message: `the upload holds more than ${maxContainers} arrays and objects (one per ${BYTES_PER_CONTAINER} bytes of --max-upload-bytes, at least ${MIN_CONTAINERS})`,
});

/**
 * One piece: a byte at a time, about 1 ns a byte (a 47 KB status report in 40 µs). Its state is in
 * locals and its bytes are literals, which V8 keeps in registers: read from the closure or the
 * module, the same loop took twice as long.
 */
function scanPiece(state: ScanState, bytes: Uint8Array, maxDepth: number, maxContainers: number): ScanProblem | undefined {
  let { depth, containers, inString, escaped, run, inexact } = state;
  let problem: ScanProblem | undefined;
  const inexactRun = INEXACT_RUN;
  const n = bytes.length;
  // A backslash that ended the last piece escapes this one's first byte.
  let i = escaped && n > 0 ? 1 : 0;
  if (i === 1) escaped = false;
  for (; i < n; i++) {
    const b = bytes[i] as number;
    if (inString) {
      // A quote ends the string; a backslash escapes the byte after it, which is skipped.
      if (b === 0x22) inString = false;
      else if (b === 0x5c) {
        if (i + 1 < n) i++;
        else escaped = true;
      }
      continue;
    }
    // Digits and dots of a number: INEXACT_RUN of them, or an exponent (an e after a digit: outside
    // strings no other e does), and a double may not hold it as written.
    if ((b >= 0x30 && b <= 0x39) || b === 0x2e) {
      if (++run >= inexactRun) inexact = true;
      continue;
    }
    if ((b === 0x65 || b === 0x45) && run > 0) inexact = true;
    run = 0;
    if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) {
      if (++depth > maxDepth) {
        problem = tooDeep(maxDepth);
        break;
      }
      if (++containers > maxContainers) {
        problem = tooMany(maxContainers);
        break;
      }
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
  Object.assign(state, { depth, containers, inString, escaped, run, inexact });
  return problem;
}

/**
 * A scanner of UTF-8 JSON given in pieces, for at most `maxDepth` levels and `maxContainers` arrays
 * and objects. Only brackets (0x5b [, 0x7b {, 0x5d ], 0x7d }) outside strings (0x22 ", 0x5c \) count:
 * no byte of a multi-byte character is one of them. Malformed JSON is left to the parser.
 */
export function createJsonScanner(maxDepth: number, maxContainers: number): JsonScanner {
  const state: ScanState = { depth: 0, containers: 0, inString: false, escaped: false, run: 0, inexact: false };
  return {
    inexact: () => state.inexact,
    push: (bytes) => scanPiece(state, bytes, maxDepth, maxContainers),
  };
}
