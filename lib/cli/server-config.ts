import 'reflect-metadata';
import { validateSync } from '../config/class-validator';
import { envName, LOG_LEVELS, TritonConfig, type LogLevel, type TritonConfigInit } from '../config/triton-config';
import { FLAGS, usageError, type FlagValue } from './flags';
import { parseBackendConfig } from '../config/backend-config';
import { defaultLogFormat } from '../logging/logger';

/** The log switches Triton has instead of one level, by flag name. */
const LOG_SWITCHES = ['log-verbose', 'log-info', 'log-warning', 'log-error'] as const;

/**
 * The server's settings: the `TSTRITON_*` variables of `env`, overridden by the flags. Every problem is reported
 * as one line naming the flag, or the variable when the value came from there. What neither sets takes
 * tritonserver's default where it differs from `new Triton()`'s: `exitOnError` true, and the log format
 * Triton's plain lines when stdout is a terminal (`stdoutIsTerminal`), JSON lines otherwise.
 *
 * @throws TritonError `INVALID_CONFIG` with a one-line message.
 */
export function serverConfig(flags: ReadonlyMap<string, FlagValue>, env: NodeJS.ProcessEnv, stdoutIsTerminal: boolean | undefined = process.stdout.isTTY): TritonConfig {
  const defaults = new TritonConfig();
  const init: Record<string, unknown> = {};
  /** Which flag set each field, for the messages. */
  const setBy = new Map<string, string>();
  for (const spec of FLAGS) {
    const value = flags.get(spec.name);
    if (value === undefined || spec.field === undefined) continue;
    // A repeated flag whose field is one string (the restricted APIs) joins its values as the variable does.
    const list = Array.isArray((defaults as unknown as Record<string, unknown>)[spec.field]);
    init[spec.field] = Array.isArray(value) && !list ? value.join(';') : value;
    setBy.set(spec.field, `--${spec.name}`);
  }
  const cacheConfig = flags.get('cache-config');
  if (typeof cacheConfig === 'string') {
    if (setBy.has('responseCacheByteSize')) throw usageError('--cache-config and --response-cache-byte-size both set the response cache size; give one');
    init.responseCacheByteSize = parseCacheConfig(cacheConfig);
    setBy.set('responseCacheByteSize', '--cache-config');
  }
  const config = TritonConfig.fromEnv(env, init as TritonConfigInit);
  const switches = LOG_SWITCHES.filter((name) => flags.has(name));
  if (switches.length > 0) {
    config.logLevel = logLevelOf(config.logLevel, flags);
    setBy.set('logLevel', `--${switches.join('/--')}`);
  }
  config.exitOnError ??= true;
  config.logFormat ??= defaultLogFormat(stdoutIsTerminal);
  const problems = validateSync(config, { forbidUnknownValues: false }).flatMap((e) => {
    const source = setBy.get(e.property) ?? envName(e.property);
    const got = JSON.stringify((config as unknown as Record<string, unknown>)[e.property]);
    // class-validator's messages start with the field's name; the user knows the flag or the variable.
    return Object.values(e.constraints ?? {}).map((m) => `${m.startsWith(e.property) ? `${source}${m.slice(e.property.length)}` : `${source}: ${m}`}, got ${got}`);
  });
  if (problems.length > 0) throw usageError(problems.join('; '));
  try {
    parseBackendConfig(config.backendConfig, setBy.get('backendConfig') ?? envName('backendConfig'));
  } catch (err) {
    throw usageError((err as Error).message);
  }
  return config;
}

/**
 * Triton's `--cache-config local,size=N` as a byte size: only the local cache exists here.
 *
 * @throws TritonError `INVALID_CONFIG` for another cache or a size that is not an integer.
 */
export function parseCacheConfig(value: string): number {
  const match = /^local,size=(\d+)$/.exec(value.trim());
  if (!match) throw usageError(`--cache-config expects local,size=<bytes>, got "${value}"`);
  return Number(match[1]);
}

/**
 * Triton's log switches as one level. A level is a threshold, so the most verbose severity still switched on
 * decides it: `--log-verbose 1` gives debug; `--log-info false` gives warn unless debug is on.
 */
export function logLevelOf(base: LogLevel, flags: ReadonlyMap<string, FlagValue>): LogLevel {
  const at = LOG_LEVELS.indexOf(base);
  const on = (flag: string, level: LogLevel): boolean => {
    const value = flags.get(flag);
    return value === undefined ? at >= LOG_LEVELS.indexOf(level) : flag === 'log-verbose' ? Number(value) > 0 : value === true;
  };
  if (on('log-verbose', 'debug')) return 'debug';
  if (on('log-info', 'info')) return 'info';
  if (on('log-warning', 'warn')) return 'warn';
  if (on('log-error', 'error')) return 'error';
  return 'silent';
}
