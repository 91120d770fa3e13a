import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ResourceLimits } from 'node:worker_threads';
import { invalidConfig } from '../base/errors';
import { parseDevice, type Device } from './instance';

/** Marks the objects `workers()` returns, so that `bind()` tells them from inference objects. */
export const WORKER_SPEC_MARK: unique symbol = Symbol.for('tstriton.workerSpec');

/** Settings shared by the worker threads of one `workers()` spec. */
export interface WorkerOptions {
  /** V8 heap limits of each worker thread; a worker that exceeds them crashes and is restarted. */
  resourceLimits?: ResourceLimits;
  /** `process.env` inside each worker; a copy of the main thread's (taken when the worker starts) by default. */
  env?: Readonly<Record<string, string>>;
  /** Node options of each worker (e.g. `['--import', 'tsx']` to load a TypeScript module); the main thread's by default. */
  execArgv?: readonly string[];
  /** Delay before the second consecutive restart of a crashing worker, doubled for each further one; 100 ms by default. */
  restartDelayMs?: number;
  /** Upper bound of that delay; 10 000 ms by default. */
  maxRestartDelayMs?: number;
  /** How long `close()` waits for in-flight batches and `finalize()` before terminating the worker; 30 000 ms by default. */
  closeTimeoutMs?: number;
}

/** The argument of `workers()`. */
export interface WorkersInit {
  /** The module to load in each worker: an absolute path or a `file:` URL. Workers cannot receive closures. */
  module: string | URL;
  /** The export to use; `'default'` by default (for a CommonJS module without one, `module.exports` itself). */
  exportName?: string;
  /** One worker thread per entry: `'cpu'`, `'gpu'`, `'gpu:1'`, `'cuda:1'` or `{ kind, id }`; `['cpu']` by default. */
  devices?: readonly (string | Device)[];
  options?: WorkerOptions;
  /** Settings for the callable (structured-cloneable), given to it as `context.data`. */
  data?: unknown;
}

/** A validated `workers()` spec: one worker instance per device, each loading `module` and taking `exportName`. */
export interface WorkerSpec {
  readonly [WORKER_SPEC_MARK]: true;
  /** Absolute path of the module. */
  readonly module: string;
  readonly exportName: string;
  readonly devices: readonly Device[];
  readonly options: ResolvedWorkerOptions;
  readonly data?: unknown;
}

/** Worker options with their defaults filled in. */
export interface ResolvedWorkerOptions {
  readonly resourceLimits?: ResourceLimits;
  readonly env?: Readonly<Record<string, string>>;
  readonly execArgv?: readonly string[];
  readonly restartDelayMs: number;
  readonly maxRestartDelayMs: number;
  readonly closeTimeoutMs: number;
}

const DEFAULTS = { restartDelayMs: 100, maxRestartDelayMs: 10_000, closeTimeoutMs: 30_000 } as const;

/**
 * Declares worker-thread instances: each device gets a dedicated worker thread that loads `module`, takes
 * its `exportName` export and builds the callable there, with the device in its context. Pass the result as
 * `inferFunc` (alone or in a list). Every invalid value is rejected here with a message naming it.
 */
export function workers(init: WorkersInit): WorkerSpec {
  if (typeof init !== 'object' || init === null) throw invalidConfig(`workers(): expected an object { module, exportName?, devices?, options? }, got ${init === null ? 'null' : typeof init}`);
  const module = modulePath(init.module);
  const exportName = init.exportName ?? 'default';
  if (typeof exportName !== 'string' || exportName === '') throw invalidConfig(`workers(): exportName must be a non-empty string, got ${JSON.stringify(exportName)}`);
  const devices = parseDevices(init.devices ?? ['cpu']);
  const options = resolveOptions(init.options ?? {});
  try {
    structuredClone(init.data);
  } catch (err) {
    throw invalidConfig(`workers(): data must be structured-cloneable (it is copied into each worker): ${(err as Error).message}`);
  }
  return Object.freeze({ [WORKER_SPEC_MARK]: true as const, module, exportName, devices, options, data: init.data });
}

/** True if `value` was made by `workers()`. */
export function isWorkerSpec(value: unknown): value is WorkerSpec {
  return typeof value === 'object' && value !== null && (value as Partial<WorkerSpec>)[WORKER_SPEC_MARK] === true;
}

function modulePath(module: unknown): string {
  let path: string;
  if (module instanceof URL || (typeof module === 'string' && module.startsWith('file:'))) {
    try {
      path = fileURLToPath(module);
    } catch (err) {
      throw invalidConfig(`workers(): module ${String(module)} is not a valid file URL: ${(err as Error).message}`);
    }
  } else if (typeof module === 'string') {
    if (!isAbsolute(module)) throw invalidConfig(`workers(): module must be an absolute path or a file: URL, got '${module}' (try path.resolve(__dirname, '${module}'))`);
    path = module;
  } else {
    throw invalidConfig(`workers(): module must be an absolute path or a file: URL, got ${module === null ? 'null' : typeof module}`);
  }
  if (!existsSync(path)) throw invalidConfig(`workers(): module '${path}' does not exist`);
  return path;
}

function parseDevices(devices: unknown): Device[] {
  if (!Array.isArray(devices) || devices.length === 0) throw invalidConfig('workers(): devices must be a non-empty array such as [\'cpu\', \'gpu:0\']');
  return devices.map((d: unknown, i) => {
    if (typeof d === 'string') {
      try {
        return parseDevice(d);
      } catch (err) {
        throw invalidConfig(`workers(): devices[${i}]: ${(err as Error).message}`);
      }
    }
    const dev = d as Partial<Device> | null;
    if (typeof dev !== 'object' || dev === null || (dev.kind !== 'cpu' && dev.kind !== 'gpu') || !Number.isInteger(dev.id) || (dev.id as number) < 0) {
      throw invalidConfig(`workers(): devices[${i}]: expected 'cpu', 'gpu', 'gpu:N', 'cuda:N' or { kind: 'cpu' | 'gpu', id: N >= 0 }, got ${JSON.stringify(d)}`);
    }
    return { kind: dev.kind, id: dev.id as number };
  });
}

function resolveOptions(options: WorkerOptions): ResolvedWorkerOptions {
  if (typeof options !== 'object' || options === null) throw invalidConfig('workers(): options must be an object');
  const resolved = { ...DEFAULTS, ...options };
  // A zero restart delay would respawn a worker that cannot start in a tight loop.
  for (const [key, min] of [['restartDelayMs', 1], ['maxRestartDelayMs', 1], ['closeTimeoutMs', 0]] as const) {
    const v = resolved[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min) throw invalidConfig(`workers(): options.${key} must be a finite number >= ${min}, got ${String(v)}`);
  }
  if (resolved.execArgv !== undefined && (!Array.isArray(resolved.execArgv) || !resolved.execArgv.every((a) => typeof a === 'string'))) {
    throw invalidConfig('workers(): options.execArgv must be an array of strings');
  }
  if (resolved.env !== undefined && (typeof resolved.env !== 'object' || resolved.env === null)) throw invalidConfig('workers(): options.env must be an object of strings');
  return resolved;
}

