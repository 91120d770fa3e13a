import pino, { type Logger } from 'pino';
import type { LogLevel } from './config/triton-config';

/** The SDK's structured logger (JSON lines on stdout). */
export type { Logger };

/** Creates the server's logger at the configured level. */
export function createLogger(level: LogLevel): Logger {
  return pino({ name: 'tstriton', level });
}
