import { pino, type Logger, type DestinationStream } from 'pino';

/** Paths that may carry a secret; pino replaces them before a line is written. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'api_key',
  'apiKey',
  '*.api_key',
  '*.apiKey',
  'admin_token',
  'secrets_key',
  'secret',
  '*.secret',
  'key',
  '*.key',
  'redis_url',
  'database_url',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, destination);
}

export type { Logger };
