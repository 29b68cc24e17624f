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
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * A scanner of UTF-8 JSON given in pieces, for at most `maxDepth` levels and `maxContainers` arrays
 * and objects. Only brackets outside strings count (no byte of a multi-byte character is a bracket,
 * a quote or a backslash); malformed JSON is left to the parser.
 */
export function createJsonScanner(maxDepth: number, maxContainers: number): JsonScanner {
  let depth = 0;
  let containers = 0;
  let inString = false;
  /** Backslashes ending the last piece inside a string: the next piece's first quote may be escaped by them. */
  let carried = 0;
  return {
    push(bytes) {
      const n = bytes.length;
      let i = 0;
      while (i < n) {
        if (inString) {
          const quote = bytes.indexOf(QUOTE, i);
          if (quote === -1) {
            let run = 0;
            while (run < n - i && bytes[n - 1 - run] === BACKSLASH) run++;
            carried = run === n - i ? carried + run : run;
            return undefined;
          }
          let run = 0;
          while (quote - 1 - run >= i && bytes[quote - 1 - run] === BACKSLASH) run++;
          if (quote - run === i) run += carried;
          carried = 0;
          i = quote + 1;
          if (run % 2 === 0) inString = false;
          continue;
        }
        const b = bytes[i++];
        if (b === QUOTE) inString = true;
        else if (b === OPEN_ARRAY || b === OPEN_OBJECT) {
          if (++depth > maxDepth)
            return {
              code: 'bad_request',
              message: `the upload is nested deeper than ${maxDepth} levels, which OPA never sends (its JSON decoder refuses more than 10000)`,
            };
          if (++containers > maxContainers)
            return {
              code: 'too_large',
              message: `the upload holds more than ${maxContainers} arrays and objects (one per ${BYTES_PER_CONTAINER} bytes of --max-upload-bytes, at least ${MIN_CONTAINERS})`,
            };
        } else if (b === CLOSE_ARRAY || b === CLOSE_OBJECT) depth--;
      }
      return undefined;
    },
  };
}
