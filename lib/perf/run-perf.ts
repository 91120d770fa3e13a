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
import type { CallSettings, ClientTransport } from '../client/client-transport';
import type { ModelConfigJson } from '../config/triton-model-config';
import type { ParameterValue } from '../protocol/infer-parameter';
import type { ModelMetadata } from '../protocol/model-metadata';
import type { ConnectionTarget } from './connection-target';
import { joinCollected, LoadPool, splitCollected, type Collected } from './load-pool';
import { PERF_DEFAULTS } from './perf-defaults';
import { RECORD_FIELDS, type StepRequests } from './load-messages';
import { modelInputs, requestInputs, type ModelInputs } from './perf-inputs';
import { encodeRequest, type RequestFrame, type RequestInput } from './perf-requests';
import type { PerfLoad, PerfOptions, PerfProgress, PerfReport, PerfStep } from './perf-types';
import { isStable, mergeWindows, STABILITY_WINDOWS, type PerfWindow } from './perf-window';
import { statsSnapshot, type StatsSnapshot } from './server-stats';
import { OUTPUT_SHARED_MEMORY_SIZE, SharedMemoryRegions } from './shared-memory-regions';

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
    tls: { ca: target.tls?.ca, cert: target.tls?.cert, key: target.tls?.key, ...(target.tls?.verifyPeer === false && { rejectUnauthorized: false }) },
  });
  let pool: LoadPool | undefined;
  let shm: SharedMemoryRegions | undefined;
  const settings = { timeoutMs: CALL_TIMEOUT_MS, ...(target.headers && { headers: target.headers }) };
  try {
    const extensions = await serverExtensions(transport, options, settings);
    const model = await describeModel(transport, options, settings);
    if (model.decoupled && !options.streaming) {
      throw invalidConfig(`model '${target.model}' is decoupled (any number of responses per request): measure it with -i grpc --streaming`);
    }
    // Servers without the binary tensor extension (MLServer) get JSON tensors unless a format was asked for.
    const defaultFormat = extensions === undefined || extensions.includes('binary_tensor_data') ? 'binary' : 'json';
    const readStats = await statsReader(transport, target.model, version, settings);
    const inputs = requestInputs(model, batchSize, options.inputData ?? 'random');
    if (options.sharedMemory === 'system') {
      const sizes = { batchSize, outputBytes: options.outputSharedMemorySize ?? OUTPUT_SHARED_MEMORY_SIZE };
      shm = await SharedMemoryRegions.register(transport, inputs, model.outputs, sizes, settings);
    }
    const frame: RequestFrame = {
      protocol: target.protocol,
      authority: `${address.host}:${address.port}`,
      model: target.model,
      version,
      headers: target.protocol === 'http' ? (target.headers ?? {}) : {},
      inputFormat: options.inputTensorFormat ?? defaultFormat,
      outputFormat: options.outputTensorFormat ?? defaultFormat,
      ...(shm && { outputs: shm.outputs }),
    };
    const requestInputsList: readonly (readonly RequestInput[])[] = shm ? shm.inputs : inputs;
    const connection: ConnectionTarget = {
      protocol: target.protocol,
      host: address.host,
      port: address.port,
      ...(target.tls && { tls: { ...target.tls, verifyPeer: target.tls.verifyPeer ?? true, verifyHost: target.tls.verifyHost ?? true } }),
      ...(options.streaming && { streaming: true }),
      ...(options.streaming && model.decoupled && { decoupled: true }),
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
      if (!step) break;
      steps.push(step);
      onProgress?.({ stepIndex, stepCount: options.loads.length, load, trial: 0, requestsSoFar: step.requests, step });
    }
    return { target, batchSize, steps };
  } finally {
    await pool?.close();
    await shm?.unregister(transport, settings);
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
  let carried = await pool.collect();
  let start = epochNow();
  pool.begin(load, requests);
  try {
    for (let trial = 1; trial <= maxTrials; trial++) {
      await waitWindow(intervalMs, options.signal, progress && (() => progress(trial, pool.completedSoFar - completedAtStart)));
      const sent = epochNow();
      const statsAfter = await readStats();
      const edge = windowEdge(statsAfter, sent, epochNow(), start);
      // The requests that ended after the server's counters were read belong to the next window.
      const [collected, later] = splitCollected(joinCollected(carried, await pool.collect()), edge);
      carried = later;
      windows.push({ durationMs: edge - start, collected, ...(statsBefore && statsAfter && { statsBefore, statsAfter }) });
      statsBefore = statsAfter;
      start = edge;
      if (collected.count > 0 && collected.count === countErrors(collected)) {
        throw new TritonError('INFERENCE_FAILED', `every request failed (${collected.count}): ${collected.firstError ?? 'no answer'}`);
      }
      if (isStable(windows, stability, options.percentile) || options.signal?.aborted) break;
    }
  } finally {
    // After a failure, the failure is what is reported, not a second one from stopping.
    await pool.end().catch(() => undefined);
  }
  const drained = await pool.collect();
  if (windows.length === 0) return undefined;
  const stable = isStable(windows, stability, options.percentile);
  const completedRequests = windows.reduce((n, w) => n + w.collected.count, carried.count + drained.count);
  return { ...mergeWindows(windows.slice(-STABILITY_WINDOWS), batchSize, load, stable, options.percentile), completedRequests };
}

function countErrors(collected: Collected): number {
  let errors = 0;
  for (const records of collected.records) for (let i = 1; i < records.length; i += RECORD_FIELDS) if ((records[i] as number) < 0) errors++;
  return errors;
}

/** Now, in ms since the epoch (fractional), the clock of the load threads' records. */
function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The moment the server's counters describe, read between `sentMs` and `receivedMs`: the end of the last inference
 * they include when that lies in the window (a server under load may answer from counters published a little
 * earlier, as tstriton's front-end threads do), else the middle of the statistics call.
 */
function windowEdge(stats: StatsSnapshot | undefined, sentMs: number, receivedMs: number, startMs: number): number {
  const last = stats?.lastInferenceMs ?? 0;
  return last > startMs && last <= receivedMs ? last : (sentMs + receivedMs) / 2;
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

/**
 * The protocol extensions the server lists, after checking that it answers; undefined when it answers but does not
 * describe itself (then it is taken to be Triton-like).
 */
async function serverExtensions(transport: ClientTransport, options: PerfOptions, settings: CallSettings): Promise<readonly string[] | undefined> {
  try {
    return (await transport.serverMetadata(settings)).extensions;
  } catch {
    try {
      await transport.serverReady(settings);
      return undefined;
    } catch (err) {
      throw invalidConfig(`cannot reach the server at ${options.target.url} (${options.target.protocol}): ${(err as Error).message}`);
    }
  }
}

/** The model's inputs, after checking that the server knows the model. */
async function describeModel(transport: ClientTransport, options: PerfOptions, settings: CallSettings): Promise<ModelInputs> {
  const { target } = options;
  const version = target.version ?? '';
  const what = `model '${target.model}'${version ? ` version ${version}` : ''}`;
  let metadata: ModelMetadata;
  try {
    metadata = await transport.modelMetadata(target.model, version, settings);
  } catch (err) {
    throw invalidConfig(`${what} is not available at ${target.url}: ${(err as Error).message}`);
  }
  if (metadata.inputs.length === 0) {
    throw invalidConfig(`${what} lists no inputs in its metadata, so tstriton perf cannot tell what to send: declare them on the server (MLServer: "inputs" in model-settings.json)`);
  }
  // The model config is Triton's extension (MLServer has none): without it the model is taken not to batch.
  const config = await transport.modelConfig(target.model, version, settings).catch(() => ({}) as ModelConfigJson);
  return modelInputs(metadata, config, options.shapes ?? {});
}

/** Reads the model's statistics; a server without the statistics extension gives steps without a server side. */
async function statsReader(transport: ClientTransport, model: string, version: string, settings: CallSettings): Promise<() => Promise<StatsSnapshot | undefined>> {
  const read = async (): Promise<StatsSnapshot | undefined> => statsSnapshot(await transport.modelStatistics(model, version, settings), model, version);
  try {
    if ((await read()) === undefined) return async () => undefined;
  } catch {
    return async () => undefined;
  }
  return () => read().catch(() => undefined);
}

/**
 * The pre-encoded requests of one step: shared by every lane, or a sequence per lane for a sequence model (a lane
 * per request in flight in a closed loop, `numOfSequences` lanes in an open loop).
 */
function stepRequests(model: ModelInputs, load: PerfLoad, frame: RequestFrame, inputs: readonly (readonly RequestInput[])[], options: PerfOptions): StepRequests {
  // A decoupled model is asked to mark its last response, even when it has nothing more to send.
  const parameters: Record<string, ParameterValue> = model.decoupled ? { triton_enable_empty_final_response: true } : {};
  if (!model.sequence) return { shared: inputs.map((i) => encodeRequest(frame, i, parameters)) };
  const lanes = load.kind === 'concurrency' ? load.concurrency : (options.numOfSequences ?? PERF_DEFAULTS.numOfSequences);
  const length = options.sequenceLength ?? PERF_DEFAULTS.sequenceLength;
  const firstId = options.sequenceIdStart ?? 1;
  return {
    perLane: Array.from({ length: lanes }, (_, lane) =>
      Array.from({ length }, (_, k) =>
        encodeRequest(frame, inputs[k % inputs.length] as readonly RequestInput[], {
          ...parameters,
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
