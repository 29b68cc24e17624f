// The root logger. Tokens never reach a log line: Authorization headers and token fields are redacted.
import { pino, type Logger, type LevelWithSilent } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'secret.token',
  'data.token',
];

/** The root logger at `level`, writing to `destination` (stdout when not given), with token paths redacted. */
export function createLogger(level: LevelWithSilent, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'acl-operator' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
