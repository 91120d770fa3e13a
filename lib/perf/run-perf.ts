/**
 * `runPerf`: perf_analyzer's measurement loop in TypeScript. For each load of the sweep (a concurrency, or a
 * request rate), the load threads send pre-encoded requests while the main thread measures windows of
 * `measurementIntervalMs`, reading the server's statistics at each window's edges, until the last three windows
 * agree within `stabilityPercentage` or `maxTrials` windows have passed; the step reports those three merged.
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { invalidConfig, TritonError } from '../base/errors';
import { createTransport } from '../client/create-transport';
import type { ClientTransport } from '../client/client-transport';
import type { ConnectionTarget } from './connection-target';
import { LoadPool } from './load-pool';
import type { StepRequests } from './load-messages';
import { modelInputs, requestInputs, type ModelInputs } from './perf-inputs';
import { encodeRequest, type RequestFrame, type RequestInput } from './perf-requests';
import type { PerfLoad, PerfOptions, PerfProgress, PerfReport, PerfStep } from './perf-types';
import { isStable, mergeWindows, STABILITY_WINDOWS, type PerfWindow } from './perf-window';
import { statsSnapshot, type StatsSnapshot } from './server-stats';

/** perf_analyzer's defaults. */
export const PERF_DEFAULTS = {
  measurementIntervalMs: 5000,
  stabilityPercentage: 10,
  maxTrials: 10,
  sequenceLength: 20,
} as const;

/** How long set-up calls (metadata, config, statistics) may take. */
const CALL_TIMEOUT_MS = 10_000;
/** How often progress is reported while a window runs. */
const PROGRESS_MS = 250;

/**
 * Measures `options.loads` in turn against `options.target` and resolves with one step per load. Problems found
 * before any load (the server cannot be reached, the model is unknown, a shape or data does not fit the model) are
 * `INVALID_CONFIG` errors naming them.
 */
export async function runPerf(options: PerfOptions, onProgress?: (p: PerfProgress) => void): Promise<PerfReport> {
  const { target } = options;
  const version = target.version ?? '';
  const batchSize = options.batchSize ?? 1;
  const address = hostPort(target.url, target.protocol);
  const transport = createTransport(`${scheme(target)}://${address.host}:${address.port}`, {
    tls: { ca: target.tls?.ca, cert: target.tls?.cert, key: target.tls?.key },
  });
  let pool: LoadPool | undefined;
  try {
    const model = await describeModel(transport, options);
    const readStats = await statsReader(transport, target.model, version, target.headers);
    const inputs = requestInputs(model, batchSize, options.inputData ?? 'random');
    if (options.sharedMemory === 'system') throw invalidConfig('--shared-memory system is not supported yet');
    const frame: RequestFrame = {
      protocol: target.protocol,
      authority: `${address.host}:${address.port}`,
      model: target.model,
      version,
      headers: target.protocol === 'http' ? (target.headers ?? {}) : {},
      inputFormat: options.inputTensorFormat ?? 'binary',
      outputFormat: options.outputTensorFormat ?? 'binary',
    };
    const requestInputsList: readonly (readonly RequestInput[])[] = inputs;
    const connection: ConnectionTarget = {
      protocol: target.protocol,
      host: address.host,
      port: address.port,
      ...(target.tls && { tls: { ...target.tls, verifyPeer: target.tls.verifyPeer ?? true, verifyHost: target.tls.verifyHost ?? true } }),
      ...(options.streaming && { streaming: true }),
      ...(target.protocol === 'grpc' && target.headers && { metadata: target.headers }),
    };
    const threads = options.maxThreads ?? Math.max(1, Math.min(4, Math.floor(availableParallelism() / 2)));
    pool = await LoadPool.start(threads, connection, onProgress ? PROGRESS_MS : 0);
    const steps: PerfStep[] = [];
    for (const [stepIndex, load] of options.loads.entries()) {
      if (options.signal?.aborted) break;
      const requests = stepRequests(model, load, frame, requestInputsList, options);
      const progress = onProgress && ((trial: number, requestsSoFar: number) => onProgress({ stepIndex, stepCount: options.loads.length, load, trial, requestsSoFar }));
      const step = await measureStep(pool, load, requests, readStats, batchSize, options, progress);
      if (step) steps.push(step);
    }
    return { target, batchSize, steps };
  } finally {
    await pool?.close();
    transport.close();
  }
}

/** Runs one load until its windows are stable (or `maxTrials` windows), and merges the last ones; undefined when aborted before a window ended. */
async function measureStep(
  pool: LoadPool,
  load: PerfLoad,
  requests: StepRequests,
  readStats: () => Promise<StatsSnapshot | undefined>,
  batchSize: number,
  options: PerfOptions,
  progress: ((trial: number, requestsSoFar: number) => void) | undefined,
): Promise<PerfStep | undefined> {
  const intervalMs = options.measurementIntervalMs ?? PERF_DEFAULTS.measurementIntervalMs;
  const maxTrials = options.maxTrials ?? PERF_DEFAULTS.maxTrials;
  const stability = options.stabilityPercentage ?? PERF_DEFAULTS.stabilityPercentage;
  const windows: PerfWindow[] = [];
  const completedAtStart = pool.completedSoFar;
  let statsBefore = await readStats();
  await pool.collect();
  let start = performance.now();
  pool.begin(load, requests);
  try {
    for (let trial = 1; trial <= maxTrials; trial++) {
      await waitWindow(intervalMs, options.signal, progress && (() => progress(trial, pool.completedSoFar - completedAtStart)));
      const end = performance.now();
      const [collected, statsAfter] = await Promise.all([pool.collect(), readStats()]);
      windows.push({ durationMs: end - start, collected, ...(statsBefore && statsAfter && { statsBefore, statsAfter }) });
      statsBefore = statsAfter;
      start = end;
      const last = windows[windows.length - 1] as PerfWindow;
      if (last.collected.count > 0 && last.collected.count === countErrors(last)) {
        throw new TritonError('INFERENCE_FAILED', `every request failed (${last.collected.count}): ${last.collected.firstError ?? 'no answer'}`);
      }
      if (isStable(windows, stability, options.percentile) || options.signal?.aborted) break;
    }
  } finally {
    await pool.end();
  }
  if (windows.length === 0) return undefined;
  const stable = isStable(windows, stability, options.percentile);
  return mergeWindows(windows.slice(-STABILITY_WINDOWS), batchSize, load, stable, options.percentile);
}

function countErrors(w: PerfWindow): number {
  let errors = 0;
  for (const records of w.collected.records) for (let i = 1; i < records.length; i += 3) if ((records[i] as number) < 0) errors++;
  return errors;
}

/** Waits `ms`, ticking every `PROGRESS_MS`; an abort ends the wait early. */
function waitWindow(ms: number, signal: AbortSignal | undefined, tick: (() => void) | undefined): Promise<void> {
  return new Promise((resolve) => {
    const ticker = tick && setInterval(tick, PROGRESS_MS);
    const done = (): void => {
      clearTimeout(timer);
      if (ticker) clearInterval(ticker);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The model's inputs, after checking that the server answers and knows the model. */
async function describeModel(transport: ClientTransport, options: PerfOptions): Promise<ModelInputs> {
  const { target } = options;
  const settings = { timeoutMs: CALL_TIMEOUT_MS, ...(target.headers && { headers: target.headers }) };
  try {
    await transport.serverReady(settings);
  } catch (err) {
    throw invalidConfig(`cannot reach the server at ${target.url} (${target.protocol}): ${(err as Error).message}`);
  }
  const version = target.version ?? '';
  const what = `model '${target.model}'${version ? ` version ${version}` : ''}`;
  try {
    const [metadata, config] = await Promise.all([transport.modelMetadata(target.model, version, settings), transport.modelConfig(target.model, version, settings)]);
    return modelInputs(metadata, config, options.shapes ?? {});
  } catch (err) {
    if (err instanceof TritonError && err.code === 'INVALID_CONFIG') throw err;
    throw invalidConfig(`${what} is not available at ${target.url}: ${(err as Error).message}`);
  }
}

/** Reads the model's statistics; a server without the statistics extension gives steps without a server side. */
async function statsReader(transport: ClientTransport, model: string, version: string, headers: Readonly<Record<string, string>> | undefined): Promise<() => Promise<StatsSnapshot | undefined>> {
  const settings = { timeoutMs: CALL_TIMEOUT_MS, ...(headers && { headers }) };
  const read = async (): Promise<StatsSnapshot | undefined> => statsSnapshot(await transport.modelStatistics(model, version, settings), model, version);
  try {
    if ((await read()) === undefined) return async () => undefined;
  } catch {
    return async () => undefined;
  }
  return () => read().catch(() => undefined);
}

/** The pre-encoded requests of one step: shared by every lane, or a sequence per lane for a sequence model. */
function stepRequests(model: ModelInputs, load: PerfLoad, frame: RequestFrame, inputs: readonly (readonly RequestInput[])[], options: PerfOptions): StepRequests {
  if (!model.sequence) return { shared: inputs.map((i) => encodeRequest(frame, i)) };
  if (load.kind !== 'concurrency') throw invalidConfig('--request-rate-range is not supported for a sequence model: use --concurrency-range');
  const length = options.sequenceLength ?? PERF_DEFAULTS.sequenceLength;
  const firstId = options.sequenceIdStart ?? 1;
  return {
    perLane: Array.from({ length: load.concurrency }, (_, lane) =>
      Array.from({ length }, (_, k) =>
        encodeRequest(frame, inputs[k % inputs.length] as readonly RequestInput[], {
          sequence_id: firstId + lane,
          ...(k === 0 && { sequence_start: true }),
          ...(k === length - 1 && { sequence_end: true }),
        }),
      ),
    ),
  };
}

function scheme(target: PerfOptions['target']): string {
  const secure = target.tls !== undefined;
  return target.protocol === 'grpc' ? (secure ? 'grpcs' : 'grpc') : secure ? 'https' : 'http';
}

/** `-u`'s `host:port` (a scheme in front is allowed and ignored); Triton's port for the protocol when none is given. */
export function hostPort(url: string, protocol: 'http' | 'grpc'): { host: string; port: number } {
  const bare = url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').replace(/\/.*$/, '');
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(bare);
  if (!m) throw invalidConfig(`-u ${url}: expected host:port`);
  const port = m[2] === undefined ? (protocol === 'grpc' ? 8001 : 8000) : Number(m[2]);
  if (!(port > 0 && port < 65536)) throw invalidConfig(`-u ${url}: port ${m[2]} is out of range`);
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}
