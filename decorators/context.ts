import { NEVER_ABORTED } from '../lib/callable/callable-marks';
import type { InstanceContext, OutputValue, ParameterValue, Request, ResponseParameters, Tensor } from '../lib';
import type { RESPONSE_PARAMETERS } from '../lib';

/**
 * What a decorated function learns about its call: the instance running it, the requests, and a signal.
 * `@batch` and `@sample` always pass it (as part of their context argument); `@tritonContext` passes it to a
 * raw callable. It is the same during warmup, whose requests have id `warmup:<name>`.
 */
export interface TritonContext {
  /**
   * The instance running the call: model name, version and config, instance name, device, `workers({ data })`.
   * The server passes it as the raw callable's second argument; undefined when the callable is called without.
   */
  readonly instance: InstanceContext | undefined;
  /** The requests of this call, in order, with their parameters, ids and signals. */
  readonly requests: readonly Request[];
  /** Fires once every request of this call has been cancelled, when finishing the work helps no one. */
  readonly signal: AbortSignal;
}

/** What a `@batch` function receives besides its inputs. */
export interface BatchContext extends TritonContext {
  /**
   * The requests that make up this batch, in order. `requests[i].inputs` are request i's rows of the batched
   * inputs (a batch-level decorator that splits or pads the batch passes the requests it derived).
   */
  readonly requests: readonly Request[];
  /** Rows each request contributes: request i owns the `rows[i]` rows after those of requests 0..i-1. */
  readonly rows: readonly number[];
  /** Each request's parameters, in the order of `requests` (PyTriton's `@batch` loses them). */
  readonly parameters: readonly Readonly<Record<string, ParameterValue>>[];
  /** Parameters `@firstValue({ parameters })` found equal in every request of the batch, by name. */
  readonly batchParameters: Readonly<Record<string, ParameterValue>>;
}

/**
 * The outputs of a batch function: one tensor per output, one row per row of the batch. Response parameters
 * go under `RESPONSE_PARAMETERS`: one object for every request of the batch, or a list with one per request.
 */
export type BatchOutputs = Record<string, OutputValue> & {
  readonly [RESPONSE_PARAMETERS]?: ResponseParameters | readonly (ResponseParameters | undefined)[];
};

/** A function over one batch: inputs concatenated along dim 0, outputs with the same number of rows. */
export type BatchFn = (inputs: Record<string, Tensor>, context: BatchContext) => Promise<BatchOutputs> | BatchOutputs;

/** A batch function of a decoupled model: yields batches of outputs, each split into one response per request. */
export type StreamingBatchFn = (inputs: Record<string, Tensor>, context: BatchContext) => AsyncIterable<BatchOutputs>;

/** A context and the function that releases its signal's listeners once the call has settled. */
export interface Scoped<C> {
  readonly context: C;
  readonly dispose: () => void;
}

/**
 * The signal of a call over `requests`, made on first read: reading a request's `signal` makes an
 * AbortSignal, which the server only creates for callables that look at it (it costs microseconds per
 * request on the hot path). A context derived from another (`derivedContext`) reads its parent's.
 */
class LazySignal {
  private made: { signal: AbortSignal; dispose: () => void } | undefined;

  constructor(private readonly requests: readonly Request[]) {}

  get signal(): AbortSignal {
    return (this.made ??= allAborted(this.requests.map((r) => r.signal))).signal;
  }

  dispose(): void {
    this.made?.dispose();
  }
}

/** A context made by `requestsContext`: plain fields and a signal read from its source. */
class CallContext implements TritonContext {
  constructor(
    readonly instance: InstanceContext | undefined,
    readonly requests: readonly Request[],
    protected readonly source: { readonly signal: AbortSignal },
  ) {}

  get signal(): AbortSignal {
    return this.source.signal;
  }
}

/** A context made by `batchContext` or `derivedContext`. */
class BatchCallContext extends CallContext implements BatchContext {
  constructor(
    instance: InstanceContext | undefined,
    requests: readonly Request[],
    readonly rows: readonly number[],
    readonly parameters: readonly Readonly<Record<string, ParameterValue>>[],
    readonly batchParameters: Readonly<Record<string, ParameterValue>>,
    source: { readonly signal: AbortSignal },
  ) {
    super(instance, requests, source);
  }
}

/** The context of a raw call over `requests`. */
export function requestsContext(requests: readonly Request[], instance: InstanceContext | undefined): Scoped<TritonContext> {
  const signal = new LazySignal(requests);
  return { context: new CallContext(instance, requests, signal), dispose: () => signal.dispose() };
}

/** The context of a batch over `requests` (whose rows are `rows`), inheriting instance and batch parameters from `base`. */
export function batchContext(
  requests: readonly Request[],
  rows: readonly number[],
  base: { readonly instance: InstanceContext | undefined; readonly batchParameters?: Readonly<Record<string, ParameterValue>> },
): Scoped<BatchContext> {
  const signal = new LazySignal(requests);
  const parameters = requests.map((r) => r.parameters);
  const context = new BatchCallContext(base.instance, requests, rows, parameters, base.batchParameters ?? {}, signal);
  return { context, dispose: () => signal.dispose() };
}

/**
 * `context` with some fields replaced, for a decorator that hands its function a changed batch. Its signal is
 * the original's (it fires when every request of the original batch is cancelled); a spread (`{ ...context }`)
 * would lose it, since `signal` is read on demand.
 */
export function derivedContext(context: BatchContext, changes: Partial<Pick<BatchContext, 'requests' | 'rows' | 'parameters' | 'batchParameters'>>): BatchContext {
  return new BatchCallContext(
    context.instance,
    changes.requests ?? context.requests,
    changes.rows ?? context.rows,
    changes.parameters ?? context.parameters,
    changes.batchParameters ?? context.batchParameters,
    context,
  );
}

/**
 * `request` with other inputs. The request's `signal` may be made on demand (the server's requests make it
 * only when read), so a spread (`{ ...request, inputs }`) would lose it; this keeps it, still on demand.
 */
export function withInputs(request: Request, inputs: Readonly<Record<string, Tensor>>): Request {
  return new RequestWithInputs(request, inputs);
}

class RequestWithInputs implements Request {
  readonly parameters: Request['parameters'];
  readonly requestedOutputs: Request['requestedOutputs'];
  readonly id: string;
  readonly infer: Request['infer'];

  constructor(
    private readonly base: Request,
    readonly inputs: Readonly<Record<string, Tensor>>,
  ) {
    this.parameters = base.parameters;
    this.requestedOutputs = base.requestedOutputs;
    this.id = base.id;
    this.infer = base.infer;
  }

  get signal(): AbortSignal {
    return this.base.signal;
  }
}

/** True if `v` looks like a batch context (what `@batch` passes); batch-level decorators refuse anything else. */
export function isBatchContext(v: unknown): v is BatchContext {
  return typeof v === 'object' && v !== null && Array.isArray((v as BatchContext).requests) && Array.isArray((v as BatchContext).rows);
}

/** Total rows of a batch. */
export function totalRows(rows: readonly number[]): number {
  let n = 0;
  for (const r of rows) n += r;
  return n;
}

/** `request 1 (id "b")`, or `request 1` when the request has no id, for error messages. */
export function describeRequest(requests: readonly Request[], index: number): string {
  const id = requests[index]?.id;
  return id ? `request ${index} (id "${id}")` : `request ${index}`;
}

const NOOP = (): void => {};

/**
 * A signal that fires once every one of `signals` has fired, with the last one's reason. Its listeners are
 * removed by `dispose` (or when it fires), so a long-lived request signal keeps none of them.
 */
export function allAborted(signals: readonly AbortSignal[]): { signal: AbortSignal; dispose: () => void } {
  const unique = [...new Set(signals)];
  if (unique.length === 0) return { signal: NEVER_ABORTED, dispose: NOOP };
  if (unique.length === 1) return { signal: unique[0] as AbortSignal, dispose: NOOP };
  const controller = new AbortController();
  const pending = unique.filter((s) => !s.aborted);
  if (pending.length === 0) {
    controller.abort((unique[unique.length - 1] as AbortSignal).reason);
    return { signal: controller.signal, dispose: NOOP };
  }
  let left = pending.length;
  const listeners = pending.map((s) => {
    const onAbort = (): void => {
      left -= 1;
      if (left === 0) {
        dispose();
        controller.abort(s.reason);
      }
    };
    s.addEventListener('abort', onAbort, { once: true });
    return [s, onAbort] as const;
  });
  const dispose = (): void => {
    for (const [s, l] of listeners) s.removeEventListener('abort', l);
  };
  return { signal: controller.signal, dispose };
}

/**
 * A key equal for two parameter values exactly when they are the same value: integers compare equal whether
 * they arrived as numbers (JSON) or BigInt (gRPC int64); an absent parameter has its own key.
 */
export function parameterKey(value: ParameterValue | undefined): string {
  if (value === undefined) return '-';
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? `n${Number(value)}` : `N${value}`;
  return `${typeof value === 'number' ? 'n' : typeof value === 'boolean' ? 'b' : 's'}${String(value)}`;
}

/** A parameter value for error messages: `0.5`, `"greedy"`, `none`. */
export function showParameter(value: ParameterValue | undefined): string {
  if (value === undefined) return 'none';
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
