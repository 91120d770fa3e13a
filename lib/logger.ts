import pino, { type Logger } from 'pino';
import type { LogLevel } from './config/triton-config';

/** The SDK's structured logger (JSON lines on stdout). */
export type { Logger };

/**
 * Creates the server's logger at the configured level. Writes are synchronous so that the last lines
 * before an exit are not lost; a broken stdout (the reading process went away) silences the logger
 * instead of retrying forever, which would keep the process from stopping.
 */
export function createLogger(level: LogLevel): Logger {
  const destination = pino.destination({ dest: 1, sync: true });
  const logger = pino({ name: 'tstriton', level }, destination);
  destination.on('error', () => {
    logger.level = 'silent';
  });
  return logger;
}
