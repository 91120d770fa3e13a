import { formatCanChange, logFormatOf, setLogFormat, type Logger } from './logger';
import { TritonError, invalidArgument } from '../base/errors';
import { LOG_FORMATS, type LogFormat } from '../config/triton-config';

/** Triton's logging settings (the `logging` extension), as `GET /v2/logging` returns them. */
export interface LogSettings {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: string;
}

const KEYS = ['log_file', 'log_info', 'log_warning', 'log_error', 'log_verbose_level', 'log_format'] as const;

/**
 * Reads the logger's settings in Triton's terms. The logger has one threshold, not independent switches:
 * `debug` is verbose level 1 with every other level on, `info` turns info, warning and error on, `warn`
 * warning and error, `error` error only, `silent` none.
 */
export function logSettingsOf(logger: Logger): LogSettings {
  const level = logger.level;
  const on = (threshold: string) => logger.levels.values[level] !== undefined && (logger.levels.values[level] as number) <= (logger.levels.values[threshold] as number);
  return {
    log_file: '',
    log_info: on('info'),
    log_warning: on('warn'),
    log_error: on('error'),
    log_verbose_level: level === 'debug' || level === 'trace' ? 1 : 0,
    log_format: logFormatOf(logger),
  };
}

/**
 * Applies an update (any subset of the settings) and returns the settings in force. The most verbose level
 * turned on sets the logger's threshold, so turning `log_info` on also logs warnings and errors. Every field
 * is checked before anything changes.
 */
export function updateLogSettings(logger: Logger, update: Readonly<Record<string, unknown>>): LogSettings {
  const next = logSettingsOf(logger);
  let format: LogFormat | undefined;
  for (const [key, value] of Object.entries(update)) {
    if (!(KEYS as readonly string[]).includes(key)) throw invalidArgument(`unknown log setting '${key}'; known settings are ${KEYS.join(', ')}`);
    switch (key) {
      case 'log_file':
        if (value !== '' && value !== null) throw new TritonError('UNSUPPORTED', 'log file location can not be updated through network protocol');
        break;
      case 'log_format':
        if (!(LOG_FORMATS as readonly unknown[]).includes(value)) {
          throw invalidArgument(`log_format '${String(value)}' is not a log format; the formats are ${LOG_FORMATS.join(', ')}`);
        }
        if (value !== 'json' && !formatCanChange(logger)) {
          throw new TritonError('UNSUPPORTED', `log_format '${String(value)}' is not supported by this logger: it writes JSON lines ('json')`);
        }
        format = value as LogFormat;
        break;
      case 'log_verbose_level': {
        const n = typeof value === 'bigint' ? Number(value) : value;
        if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw invalidArgument(`log_verbose_level must be a non-negative integer, got ${String(value)}`);
        next.log_verbose_level = n;
        break;
      }
      default:
        if (typeof value !== 'boolean') throw invalidArgument(`${key} must be a boolean, got ${JSON.stringify(value)}`);
        next[key as 'log_info' | 'log_warning' | 'log_error'] = value;
    }
  }
  if (format !== undefined) setLogFormat(logger, format);
  logger.level = next.log_verbose_level > 0 ? 'debug' : next.log_info ? 'info' : next.log_warning ? 'warn' : next.log_error ? 'error' : 'silent';
  return logSettingsOf(logger);
}
