import type { InferCall } from '../callable/callable';
import { REQUEST_MEMORY } from '../tensor/buffer-pool';
import type { Cancellation } from '../base/cancellation';
import { TritonError, failureReason, tritonError } from '../base/errors';
import { InFlight } from '../base/in-flight';
import type { Scheduled } from '../scheduler/scheduler';
import type { RequestScheduler } from '../scheduler/request-scheduler';
import type { Tensor } from '../tensor/tensor';
import type { TraceParent, Tracer } from '../tracing/trace';
import type { InferenceRequest, InferenceResponse, ValidatedOutputs } from './inference';
import type { ModelStatistics } from './model-statistics';
import { RequestJob, ScheduledRequest, type JobOwner } from './request-job';
import type { RequestValidator } from './request-validation';
import { ResponseCache } from './response-cache';

/** Runs a call a model makes to another model; `chain` is the call path ending with the caller. */
export type BlsHandler = (call: InferCall, chain: readonly string[], caller: Cancellation, trace?: TraceParent) => Promise<Record<string, Tensor>>;

/** The model a pipeline feeds: what a request needs of it on its way in and out. */
export interface PipelineModel {
  readonly name: string;
  readonly version: string;
  /** Whether it takes requests now. */
  readonly ready: boolean;
  readonly config: { readonly decoupled: boolean };
  readonly scheduler: RequestScheduler<ValidatedOutputs>;
  readonly statistics: ModelStatistics;
}

/** What a pipeline adds around the scheduler, each when the server or the model has it. */
export interface PipelineParts {
  /** The server's response cache, when this model's config enables it. */
  readonly cache?: ResponseCache | undefined;
  /** Records traces of the requests the trace settings sample. */
  readonly tracer?: Tracer | undefined;
  /** Serves `request.infer(...)` calls made by this model's callables. */
  readonly bls?: BlsHandler | undefined;
}

/**
 * One model's request pipeline: a request is validated against the specs, answered from the response cache or
 * queued on the scheduler, traced and counted in the statistics, and released once answered. It counts the
 * requests it holds, so that an unload can wait for them.
 */
export class RequestPipeline implements JobOwner {
  /** Requests this model holds, validated and not yet answered. */
  private readonly live = new InFlight();
  private readonly cache: ResponseCache | undefined;
  private readonly tracer: Tracer | undefined;
  private readonly bls: BlsHandler | undefined;

  constructor(
    private readonly model: PipelineModel,
    private readonly requests: RequestValidator,
    parts: PipelineParts,
  ) {
    this.cache = parts.cache;
    this.tracer = parts.tracer;
    this.bls = parts.bls;
  }

  /** Requests held (validated and not yet answered); per-request state lives as long. */
  get liveRequests(): number {
    return this.live.size;
  }

  /** Per-request states created and released since the model was bound (equal when nothing leaks). */
  get requestStates(): { created: number; released: number } {
    const created = this.live.total;
    return { created, released: created - this.live.size };
  }

  /** Resolves true once no request is held, or false after `timeoutMs`. */
  idle(timeoutMs: number): Promise<boolean> {
    return this.live.idle(timeoutMs);
  }

  /**
   * Validates, queues and runs one request; resolves with its validated outputs. The caller has refused a
   * decoupled model (`refuseDecoupled`), once, where it looked the model up.
   */
  infer(req: InferenceRequest): Promise<InferenceResponse> {
    let job: RequestJob;
    try {
      job = this.prepare(req);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.cache) return this.inferCached(this.cache, req, job);
    // Continuations instead of an async function: this runs for every request.
    return job.race(this.model.scheduler.enqueue(job.request, job.rows, job.batchKey, job)).then(
      (scheduled) => this.succeeded(req, job, scheduled),
      (err: unknown) => this.failed(job, err),
    );
  }

  /** Answers from the response cache, or runs the request and stores its response. */
  private inferCached(cache: ResponseCache, req: InferenceRequest, job: RequestJob): Promise<InferenceResponse> {
    const { name, version, statistics } = this.model;
    const lookupStart = performance.now();
    const { inputs, requestedOutputs, parameters } = job.request;
    const key = ResponseCache.keyOf(name, version, inputs, requestedOutputs, parameters);
    const hit = cache.lookup(key);
    const lookupNs = nsSince(lookupStart);
    if (hit) {
      statistics.recordCacheHit(job.elapsedNs(), lookupNs);
      job.span?.succeeded({ startMs: job.start, queueNs: 0, computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0, batchRows: 0 });
      job.release();
      return Promise.resolve({ id: req.id, modelName: name, modelVersion: version, outputs: hit });
    }
    return job.race(this.model.scheduler.enqueue(job.request, job.rows, job.batchKey, job)).then(
      (scheduled) => {
        if (!job.cancellation.aborted) {
          const insertStart = performance.now();
          cache.insert(key, scheduled.value);
          statistics.recordCacheMiss(lookupNs + nsSince(insertStart));
        }
        return this.succeeded(req, job, scheduled);
      },
      (err: unknown) => this.failed(job, err),
    );
  }

  private succeeded(req: InferenceRequest, job: RequestJob, scheduled: Scheduled<ValidatedOutputs>): InferenceResponse {
    try {
      job.throwIfCancelled();
    } catch (err) {
      return this.failed(job, err);
    }
    const { name, version } = this.model;
    this.model.statistics.recordSuccess(job.elapsedNs(), scheduled);
    this.tracer?.record(name, version, req.id, job.start, scheduled);
    job.span?.succeeded({ startMs: job.start, ...scheduled });
    job.release();
    const { parameters } = scheduled.value;
    const { span } = job;
    return { id: req.id, modelName: name, modelVersion: version, outputs: scheduled.value, ...(parameters && { parameters }), ...(span && { span }) };
  }

  private failed(job: RequestJob, err: unknown): never {
    const error = job.error(err);
    const reason = failureReason(error);
    this.model.statistics.recordFailure(job.elapsedNs(), reason);
    job.span?.failed(error, reason);
    job.release();
    throw error;
  }

  /**
   * Validates and queues one request of a decoupled model; its responses arrive as they are produced, each
   * marked final or not. Stopping the iteration early cancels the request (its callable sees the signal).
   */
  inferStream(req: InferenceRequest, highWaterMark: number): AsyncIterable<InferenceResponse & { final: boolean }> {
    if (!this.model.config.decoupled) {
      throw new TritonError('UNSUPPORTED', `model '${this.model.name}' is not decoupled: use ModelInfer or /infer`);
    }
    const job = this.prepare(req);
    const stream = this.model.scheduler.enqueueStream(job.request, job.rows, job.batchKey, job, highWaterMark);
    const { name, version, statistics } = this.model;
    let first = true;
    async function* responses(): AsyncGenerator<InferenceResponse & { final: boolean }> {
      let finished = false;
      try {
        const events = stream[Symbol.asyncIterator]();
        for (;;) {
          const next = await job.race(events.next());
          if (next.done) break;
          job.throwIfCancelled();
          const { value, final } = next.value;
          if (first) {
            first = false;
            statistics.recordFirstResponse(job.elapsedNs());
          }
          const parameters = value?.parameters;
          yield { id: req.id, modelName: name, modelVersion: version, outputs: value ?? [], final, ...(parameters && { parameters }) };
        }
        finished = true;
        statistics.recordSuccess(job.elapsedNs(), { value: undefined, queueNs: 0, computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0, batchRows: job.rows });
        job.span?.succeeded({ startMs: job.start, queueNs: 0, computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0, batchRows: 0 });
      } catch (err) {
        finished = true;
        const error = job.error(err);
        const reason = failureReason(error);
        statistics.recordFailure(job.elapsedNs(), reason);
        job.span?.failed(error, reason);
        throw error;
      } finally {
        if (!finished) {
          // The reader went away: cancel the request so its producer stops.
          job.cancel();
          statistics.recordFailure(job.elapsedNs(), 'CANCELED');
          job.span?.failed(new TritonError('CANCELLED', 'the reader went away'), 'CANCELED');
        }
        stream.stopReading();
        job.release();
      }
    }
    return responses();
  }

  /**
   * Everything one request needs while it lives: the validated request for the scheduler, a signal that fires
   * when the client goes away, when the request is cancelled, or at its deadline (the `timeout` parameter, or
   * the transport's deadline), and the cleanup that releases all of it.
   */
  private prepare(req: InferenceRequest): RequestJob {
    const { name, version } = this.model;
    if (!this.model.ready) throw tritonError('modelNotReady', { model: name, why: '' });
    // Built only when an error message needs it.
    const { inputs, rows, batchKey } = this.requests.inputs(req);
    const requestedOutputs = this.requests.requestedOutputs(req);
    const cancellation = req.cancellation;
    this.live.add();
    const request = new ScheduledRequest(inputs, req.parameters, requestedOutputs, req.id, cancellation, req.movableBuffer);
    if (req.sequence) request.sequence = req.sequence;
    if (req.memory) request[REQUEST_MEMORY] = req.memory;
    const job = new RequestJob(this, req, request, rows, batchKey, cancellation);
    const span = this.tracer?.start(name, version, req.id, rows, job.start, req.traceParent, req.chain !== undefined && req.chain.length > 0);
    const bls = this.bls;
    if (span) {
      job.span = span;
      // Ensemble steps and BLS calls become child spans (a remote server's too, through its traceparent).
      if (bls) request.infer = (call) => bls(call, [...(req.chain ?? []), name], cancellation, span.traceParent);
    } else if (bls) request.infer = (call) => bls(call, [...(req.chain ?? []), name], cancellation);
    return job;
  }

  /** Called once by each request's job when it ends. */
  jobReleased(): void {
    this.live.done();
  }
}

function nsSince(start: number): number {
  return Math.round((performance.now() - start) * 1e6);
}

/**
 * Refuses a decoupled model on a unary endpoint, named as Triton names it in this error (`HTTP end point`,
 * `ModelInfer RPC`): such a model answers through a stream.
 */
export function refuseDecoupled(model: { readonly config: { readonly decoupled: boolean } }, endpoint: string): void {
  if (model.config.decoupled) throw new TritonError('UNSUPPORTED', `${endpoint} doesn't support models with decoupled transaction policy`);
}
