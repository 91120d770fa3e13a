import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { invalidConfig, TritonError } from '../base/errors';
import { TritonConfig } from '../config/triton-config';
import type { ModelConfigJson } from '../config/triton-model-config';
import { queryGpus } from '../metrics/gpu-metrics';
import { frontEndThreadCount } from '../server/front-end/front-ends';
import type { AnalyzeOptions, AnalyzeProgress, AnalyzeRun, CandidateResult, Confirmation, LoadSettings, MeasuredStep, MeasureFn, ModelAnalysis } from './analyze-types';
import { candidateChanges, candidateKey, type Candidate } from './candidate';
import { startCandidateServer, type CandidateServer } from './candidate-server';
import { measureCandidate } from './measure-candidate';
import { bestStepIndex, compareSteps, type Objective } from './objective';
import { gridCandidates, gridSize, quickSearch, searchSpace, type SearchSpace } from './search-space';

/** What one candidate tells the progress bar: starting, warming up, or the sweep's step. */
type PhaseProgress = (p: Pick<AnalyzeProgress, 'phase' | 'step' | 'steps' | 'concurrency'>) => void;

/** A run's shared state: its clock, its signals and what it measured. */
interface RunState {
  readonly options: AnalyzeOptions;
  readonly measure: MeasureFn;
  /** Aborted by SIGINT. */
  readonly interrupt: AbortSignal;
  readonly deadline: number;
  readonly listeners: AnalyzeListeners;
  /** Wall time of each candidate measured so far, to tell whether another fits. */
  readonly durations: number[];
  outOfTime: boolean;
}

/** What a run tells as it goes. */
export interface AnalyzeListeners {
  /** The candidate under way and what it is doing. */
  readonly progress?: (progress: AnalyzeProgress) => void;
  /** A candidate is measured (its server stopped). */
  readonly measured?: (model: string, result: CandidateResult, base: Candidate) => void;
}

/**
 * `tstriton analyze`'s search: for each model, serves it as bound and measures it, then serves and measures the
 * candidates of the search (quick or the full grid), each in a fresh server, until the search is done, the time
 * budget is spent or `interrupt` aborts. Resolves with everything measured, whichever way it ended.
 *
 * @throws TritonError `INVALID_CONFIG` when the module or repository does not load, a model is not served, or the
 * bounds leave no candidate: before anything is measured for that model.
 */
export async function analyze(options: AnalyzeOptions, measure: MeasureFn, interrupt: AbortSignal, listeners: AnalyzeListeners = {}): Promise<AnalyzeRun> {
  const started = performance.now();
  const state: RunState = { options, measure, interrupt, deadline: started + options.timeBudgetMs, listeners, durations: [], outOfTime: false };
  const kinds = options.bounds.kinds ?? ['cpu', ...(await queryGpus('nvidia-smi')).map((g) => `gpu:${g.index}`)];
  const models: ModelAnalysis[] = [];
  for (const [i, model] of options.models.entries()) {
    if (interrupt.aborted || state.outOfTime) break;
    // Each model gets an equal share of the time left.
    const share = (state.deadline - performance.now()) / (options.models.length - i);
    models.push(await analyzeModel(state, model, kinds, performance.now() + share));
  }
  return { options, models, interrupted: interrupt.aborted, outOfTime: state.outOfTime, elapsedMs: performance.now() - started, cores: availableParallelism() };
}

/** The analysis of one model, up to `deadline` (performance.now() milliseconds). */
async function analyzeModel(state: RunState, model: string, kinds: readonly string[], deadline: number): Promise<ModelAnalysis> {
  const { options } = state;
  const results: CandidateResult[] = [];
  const measured = new Map<string, CandidateResult>();
  let count = 0;
  const progress = (label: string, planned: number | undefined) => (p: Omit<AnalyzeProgress, 'model' | 'candidate' | 'candidates' | 'label' | 'timeLeftMs'>) =>
    state.listeners.progress?.({ model, candidate: count, ...(planned !== undefined && { candidates: planned }), label, timeLeftMs: Math.max(0, state.deadline - performance.now()), ...p });

  // The model as bound: its server also says whether the model exists and what its config is.
  count = 1;
  const startedAt = performance.now();
  progress('as bound', undefined)({ phase: 'starting' });
  const server = await startDefault(state, model);
  const serverStartMs = performance.now() - startedAt;
  let base: Candidate;
  let space: SearchSpace;
  let servedConfig: ModelConfigJson;
  try {
    servedConfig = await modelConfig(server, model);
    base = candidateOf(servedConfig);
    space = searchSpace({ ...options.bounds, kinds }, base);
    const first = await measureOn(state, server, model, base, true, deadline, progress('as bound', undefined));
    results.push({ ...first, servedConfig, durationMs: performance.now() - startedAt });
    state.listeners.measured?.(model, results[0] as CandidateResult, base);
  } finally {
    await server.stop();
  }
  state.durations.push(performance.now() - startedAt);
  measured.set(candidateKey(base), results[0] as CandidateResult);
  // Time kept for measuring the best again beside the model as bound: two servers, each two long steps of about three
  // windows (a step stops once three windows agree); at most half the time left, so that the search gets its share.
  const reserve = 2 * (serverStartMs + options.load.warmupMs + 2 * Math.min(3, options.load.maxTrials) * confirmWindowMs(options.load));
  const searchDeadline = deadline - Math.min(reserve, (deadline - performance.now()) / 2);

  const planned = options.search === 'brute' ? gridSize(space) : undefined;
  const evaluate = async (candidate: Candidate): Promise<CandidateResult | undefined> => {
    const key = candidateKey(candidate);
    const known = measured.get(key);
    if (known) return known;
    if (state.interrupt.aborted) return undefined;
    if (!fits(state, searchDeadline)) {
      state.outOfTime = true;
      return undefined;
    }
    count += 1;
    const result = await runCandidate(state, model, candidate, base, `candidate-${results.length}`, deadline, progress(candidateChanges(candidate, base), planned));
    results.push(result);
    state.listeners.measured?.(model, result, base);
    measured.set(key, result);
    state.durations.push(result.durationMs);
    return state.interrupt.aborted ? undefined : result;
  };
  const compare = (a: CandidateResult, b: CandidateResult) => compareResults(a, b, options.objective);
  if (options.search === 'brute') {
    for (const candidate of gridCandidates(space)) if ((await evaluate(candidate)) === undefined) break;
  } else await quickSearch(space, base, results[0] as CandidateResult, evaluate, compare);
  const confirmation = await confirm(state, model, base, results, deadline, (label) => progress(label, undefined));
  return { model, base, space, results, ...(confirmation && { confirmation }) };
}

/** How much longer than the search's the windows of the confirmation are. */
const CONFIRM_WINDOW_FACTOR = 3;

/** The window of the confirmation's measurement, milliseconds. */
function confirmWindowMs(load: LoadSettings): number {
  return load.measurementIntervalMs * CONFIRM_WINDOW_FACTOR;
}

/**
 * Measures the best candidate of the search again, right after the model as bound, each at the concurrency of its
 * best step and the one below it (`confirmConcurrencies`), with windows three times as long. The best of many noisy
 * measurements is likely one measured high (and the model as bound, measured once, may have been measured low):
 * measuring the two back to back says whether the gain holds. Undefined when the model as bound is the best, or the
 * run stopped before both were measured.
 */
async function confirm(
  state: RunState,
  model: string,
  base: Candidate,
  results: readonly CandidateResult[],
  deadline: number,
  progress: (label: string) => PhaseProgress,
): Promise<Confirmation | undefined> {
  const { objective, load } = state.options;
  const best = bestOf(results, objective);
  const asBound = results[0] as CandidateResult;
  if (!best || best.isDefault || state.interrupt.aborted) return undefined;
  const againAt = (r: CandidateResult): LoadSettings => ({ ...load, concurrency: confirmConcurrencies(r, load.concurrency), measurementIntervalMs: confirmWindowMs(load) });
  const first = await runCandidate(state, model, asBound.candidate, base, 'confirm-as-bound', deadline, progress('as bound, again'), againAt(asBound), true);
  if (state.interrupt.aborted) return undefined;
  const second = await runCandidate(state, model, best.candidate, base, 'confirm-best', deadline, progress(`${candidateChanges(best.candidate, base)}, again`), againAt(best));
  // Stopped, or out of time before either was measured: nothing is confirmed either way.
  if (state.interrupt.aborted || first.steps.length === 0 || second.steps.length === 0) return undefined;
  return { asBound: first, best: second, windowMs: confirmWindowMs(load) };
}

/**
 * Where a result is measured again: the concurrency of its best step and the sweep's step below it. Each config is
 * compared at its own best load, as the objective compares them; a best step at the edge of the latency budget that
 * passes it when measured again falls back to the step below rather than out of the comparison.
 */
export function confirmConcurrencies(result: CandidateResult, sweep: readonly number[]): number[] {
  const load = result.steps[result.best]?.step.load;
  if (load?.kind !== 'concurrency') return [...sweep];
  const below = sweep.filter((c) => c < load.concurrency);
  return below.length > 0 ? [below[below.length - 1] as number, load.concurrency] : [load.concurrency];
}

/** Starts the server of the model as bound; a server that does not start, or that lacks a model asked for, is a usage error. */
async function startDefault(state: RunState, model: string): Promise<CandidateServer> {
  const { options } = state;
  const served = [...options.source.modules.map((m) => `--module ${m}`), ...options.source.repositories.map((r) => `--model-repository ${r}`)].join(' ');
  let server: CandidateServer;
  try {
    server = await startCandidateServer({ source: options.source, model, dir: path.join(options.workDir, model, 'as-bound'), startTimeoutMs: options.startTimeoutMs });
  } catch (err) {
    throw invalidConfig(`${served} does not serve: ${(err as Error).message}`);
  }
  // Every model asked for is checked at the first server, before anything is measured.
  const unknown = options.models.find((m) => !server.models.includes(m));
  if (unknown !== undefined) {
    await server.stop();
    throw invalidConfig(`unknown model "${unknown}": ${served} serves ${server.models.length > 0 ? server.models.map((m) => `"${m}"`).join(', ') : 'no model'}`);
  }
  return server;
}

/** Serves and measures one candidate of the search; a server that does not start is a result with its error. */
async function runCandidate(
  state: RunState,
  model: string,
  candidate: Candidate,
  base: Candidate,
  folder: string,
  deadline: number,
  onProgress: PhaseProgress,
  load: LoadSettings = state.options.load,
  isDefault = false,
): Promise<CandidateResult> {
  const startedAt = performance.now();
  onProgress({ phase: 'starting' });
  const { httpThreadCount, ...overrides } = candidate;
  let server: CandidateServer;
  try {
    server = await startCandidateServer({
      source: state.options.source,
      model,
      // The model as bound is served as it is: no overrides, the server's own threads.
      ...(!isDefault && {
        overrides: { ...overrides, ...(base.maxBatchSize === 0 && { maxBatchSize: undefined, maxQueueDelayMicroseconds: undefined }) },
        httpThreadCount,
      }),
      dir: path.join(state.options.workDir, model, folder),
      startTimeoutMs: state.options.startTimeoutMs,
    });
  } catch (err) {
    return { candidate, isDefault, steps: [], best: -1, error: (err as Error).message, durationMs: performance.now() - startedAt };
  }
  try {
    const servedConfig = await modelConfig(server, model);
    const result = await measureOn(state, server, model, candidate, isDefault, deadline, onProgress, load);
    return { ...result, servedConfig, durationMs: performance.now() - startedAt };
  } finally {
    await server.stop();
  }
}

/** Measures a running candidate until the sweep ends, the deadline passes or the run is interrupted. */
async function measureOn(
  state: RunState,
  server: CandidateServer,
  model: string,
  candidate: Candidate,
  isDefault: boolean,
  deadline: number,
  onProgress: PhaseProgress,
  load: LoadSettings = state.options.load,
): Promise<Omit<CandidateResult, 'durationMs'>> {
  const stop = new AbortController();
  const onInterrupt = () => stop.abort(state.interrupt.reason);
  state.interrupt.addEventListener('abort', onInterrupt, { once: true });
  const timer = setTimeout(() => {
    state.outOfTime = true;
    stop.abort(new Error('out of time'));
  }, Math.max(0, deadline - performance.now()));
  try {
    const steps = await measureCandidate(server, model, load, state.options.objective, state.measure, stop.signal, onProgress);
    return { candidate, isDefault, steps, best: bestStepIndex(steps.map((s) => s.step), state.options.objective), ...sweepFailure(steps) };
  } catch (err) {
    // The model as bound is measured first: a measurement that cannot be made of it (a variable dim without --shape,
    // input data that does not fit) cannot be made of any candidate.
    if (isDefault && err instanceof TritonError && err.code === 'INVALID_CONFIG') throw err;
    return { candidate, isDefault, steps: [], best: -1, error: (err as Error).message };
  } finally {
    clearTimeout(timer);
    state.interrupt.removeEventListener('abort', onInterrupt);
  }
}

/** Why a sweep measured nothing: no step had a request answered, or every request failed; with the first failure said. */
export function sweepFailure(steps: readonly MeasuredStep[]): { error?: string } {
  if (steps.length === 0 || steps.some((s) => s.step.requests > s.step.errors)) return {};
  const what = steps.every((s) => s.step.requests === 0) ? 'no step gave a measurement' : 'every request failed';
  const first = steps.find((s) => s.step.firstError !== undefined)?.step.firstError;
  return { error: first !== undefined ? `${what} (${first})` : what };
}

/** Whether another candidate, as long as the longest so far, still fits before the deadline. */
function fits(state: RunState, deadline: number): boolean {
  const longest = Math.max(0, ...state.durations);
  return performance.now() + longest <= Math.min(deadline, state.deadline);
}

/** Positive when result `a` is better than `b`: one that meets the objective beats one that does not. */
export function compareResults(a: CandidateResult, b: CandidateResult, objective: Objective): number {
  const sa = a.steps[a.best]?.step;
  const sb = b.steps[b.best]?.step;
  if (!sa || !sb) return (sa ? 1 : 0) - (sb ? 1 : 0);
  return compareSteps(sa, sb, objective);
}

/** The best of some results under the objective, or undefined when none meets it. */
function bestOf(results: readonly CandidateResult[], objective: Objective): CandidateResult | undefined {
  let best: CandidateResult | undefined;
  for (const r of results) if (r.best >= 0 && (!best || compareResults(r, best, objective) > 0)) best = r;
  return best;
}

/**
 * The config a model's analysis recommends: the best of the search, unless measuring it again beside the model as
 * bound did not hold its gain; then the model as bound. Undefined when nothing met the objective.
 */
export function bestResult(analysis: ModelAnalysis, objective: Objective): CandidateResult | undefined {
  const best = bestOf(analysis.results, objective);
  const c = analysis.confirmation;
  if (best && c && compareResults(c.best, c.asBound, objective) <= 0) return analysis.results.find((r) => r.isDefault && r.best >= 0) ?? best;
  return best;
}

/** The model config a server serves (`GET /v2/models/{m}/config`). */
async function modelConfig(server: CandidateServer, model: string): Promise<ModelConfigJson> {
  const res = await fetch(`http://127.0.0.1:${server.httpPort}/v2/models/${encodeURIComponent(model)}/config`);
  const body = (await res.json()) as ModelConfigJson & { error?: string };
  if (!res.ok) throw new Error(`GET /v2/models/${model}/config answered ${res.status}: ${body.error ?? ''}`);
  return body;
}

/** A served config in the terms of a candidate; the threads are the server's default under this environment. */
export function candidateOf(config: ModelConfigJson): Candidate {
  const groups = (config.instance_group as { kind?: string; count?: number; gpus?: number[] }[] | undefined) ?? [];
  const first = groups[0];
  const env = process.env.TSTRITON_HTTP_THREAD_COUNT;
  return {
    maxBatchSize: Number(config.max_batch_size ?? 0),
    maxQueueDelayMicroseconds: Number((config.dynamic_batching as { max_queue_delay_microseconds?: number } | undefined)?.max_queue_delay_microseconds ?? 0),
    instanceCount: groups.reduce((n, g) => n + (g.count ?? 1), 0) || 1,
    kind: first?.kind === 'KIND_GPU' ? `gpu:${first.gpus?.[0] ?? 0}` : 'cpu',
    httpThreadCount: frontEndThreadCount(new TritonConfig({ httpThreadCount: env && /^\d+$/.test(env) ? Number(env) : 0 })),
  };
}
