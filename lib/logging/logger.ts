import pino, { type Logger } from 'pino';
import type { LogFormat, LogLevel } from '../config/triton-config';

/** The SDK's logger (pino): JSON lines on stdout, or Triton's plain lines (`logFormat`). */
export type { Logger };

/** Where a logger's lines go, in the format it writes them; the format can change while it runs. */
class LogOutput {
  constructor(
    private readonly destination: { write(line: string): unknown },
    public format: LogFormat,
  ) {}

  /** pino's line (JSON), written as it is or as a plain line. */
  write(line: string): void {
    this.destination.write(this.format === 'json' ? line : plainLine(line, this.format));
  }
}

const OUTPUTS = new WeakMap<Logger, LogOutput>();

/**
 * Creates the server's logger at the configured level, writing `format` lines (JSON unless told). Writes are
 * synchronous so that the last lines before an exit are not lost; a broken stdout (the reading process went
 * away) silences the logger instead of retrying forever, which would keep the process from stopping.
 */
export function createLogger(level: LogLevel, format: LogFormat = 'json'): Logger {
  const destination = pino.destination({ dest: 1, sync: true });
  const output = new LogOutput(destination, format);
  const logger = pino({ name: 'tstriton', level }, output);
  destination.on('error', () => {
    logger.level = 'silent';
  });
  OUTPUTS.set(logger, output);
  return logger;
}

/** The format a logger writes: `json` for one that `createLogger` did not make. */
export function logFormatOf(logger: Logger): LogFormat {
  return OUTPUTS.get(logger)?.format ?? 'json';
}

/** Whether the logger is one `createLogger` made, whose format can change. */
export function formatCanChange(logger: Logger): boolean {
  return OUTPUTS.has(logger);
}

/** Changes the format of a logger `createLogger` made; false for another logger (which keeps writing JSON). */
export function setLogFormat(logger: Logger, format: LogFormat): boolean {
  const output = OUTPUTS.get(logger);
  if (output) output.format = format;
  return output !== undefined;
}

/**
 * The format `tstriton serve` writes when `logFormat` is not set: Triton's plain lines for a person at a
 * terminal, JSON lines for anything else (a pipe, a file, a container's log collector).
 */
export function defaultLogFormat(stdoutIsTerminal: boolean | undefined): LogFormat {
  return stdoutIsTerminal ? 'default' : 'json';
}

/** pino's level numbers as Triton's severity letters: V(erbose), I(nfo), W(arning), E(rror). */
function severity(level: number): string {
  return level <= 20 ? 'V' : level <= 30 ? 'I' : level <= 40 ? 'W' : 'E';
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The fields pino adds to every line, left out of a plain line (the time, the severity and the pid lead it). */
const OWN_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg']);

/**
 * One JSON line as Triton writes it: `I0131 12:34:56.789 1234] message key=value` (`default`, local time) or
 * `2026-01-31T12:34:56Z I 1234] message key=value` (`ISO8601`, UTC), the message's own fields after it.
 */
export function plainLine(json: string, format: 'default' | 'ISO8601'): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = new Date(typeof entry.time === 'number' ? entry.time : Date.now());
  const level = severity(typeof entry.level === 'number' ? entry.level : 30);
  const pid = typeof entry.pid === 'number' ? entry.pid : process.pid;
  const head =
    format === 'ISO8601'
      ? `${time.toISOString().replace(/\.\d{3}Z$/, 'Z')} ${level} ${pid}]`
      : `${level}${pad(time.getMonth() + 1)}${pad(time.getDate())} ${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}.${pad(time.getMilliseconds(), 3)} ${pid}]`;
  const fields = Object.entries(entry)
    .filter(([key]) => !OWN_FIELDS.has(key))
    .map(([key, value]) => ` ${key}=${fieldText(value)}`)
    .join('');
  return `${head} ${typeof entry.msg === 'string' ? entry.msg : ''}${fields}\n`;
}

/** A field's value in a plain line: a word as it is, anything else (text with spaces, objects) as JSON; an error by its message. */
function fieldText(value: unknown): string {
  if (typeof value === 'object' && value !== null && 'message' in value && 'stack' in value) return JSON.stringify((value as { message: unknown }).message);
  if (typeof value === 'string' && /^[^\s"=]+$/.test(value)) return value;
  return JSON.stringify(value);
}
