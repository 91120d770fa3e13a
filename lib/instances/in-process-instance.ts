import { TritonError } from '../base/errors';
import { type InferCallable, type Request, type Response, type StreamItem, isAsyncIterable } from '../callable/callable';
import { buildCallable, loadCallable, needsContext, type InstanceTarget, type LoadedCallable } from '../callable/infer-func';
import { HealthListeners } from './health-listeners';
import type { Device, HealthEvent, Instance, InstanceContext, InstanceReport } from './instance';
import { checkResponses, startError } from './instance-errors';

type State = 'new' | 'starting' | 'ready' | 'closing' | 'closed';

/**
 * Runs the callable on the main thread: right for I/O-bound or already asynchronous code.
 *
 * The entry is a raw callable, an object with a decorated method (and optional `initialize`/`finalize`
 * hooks), a class or an `instanceFactory`; see `buildCallable` for the rule. Functions and objects are
 * resolved at construction so that `bind()` rejects a bad one at once; classes and factories when the
 * instance starts, since they need its context.
 */
export class InProcessInstance implements Instance {
  private loaded: LoadedCallable | undefined;
  private state: State = 'new';
  private closing: Promise<void> | undefined;
  private readonly health = new HealthListeners();
  /** What the callable said of itself when the instance started. */
  report: InstanceReport | undefined;

  constructor(
    readonly name: string,
    readonly device: Device,
    private readonly entry: InferCallable | InstanceTarget,
    /** The model's name, for error messages; the instance name by default. */
    modelName: string = name,
  ) {
    if (!needsContext(entry)) this.loaded = loadCallable(entry, modelName);
  }

  /** True once the callable is built (at once for functions and objects) until the instance closes. */
  get healthy(): boolean {
    return this.loaded !== undefined && this.state !== 'closing' && this.state !== 'closed';
  }

  /** Given to the callable with each batch, so decorators can read the model and instance. */
  private context: InstanceContext | undefined;

  /** Builds the callable if it needs the context, then awaits the object's `initialize(context)`. */
  async start(context: InstanceContext): Promise<void> {
    this.context = context;
    if (this.state !== 'new') throw new TritonError('INTERNAL', `instance ${this.name}: start() called twice`);
    this.state = 'starting';
    try {
      this.loaded ??= await buildCallable(this.entry, context);
      await this.loaded.initialize?.(context);
      this.report = this.loaded.report?.();
    } catch (err) {
      this.loaded = undefined;
      this.state = 'closed';
      throw startError(this.name, err);
    }
    this.state = 'ready';
    this.health.emit({ instance: this.name, healthy: true });
  }

  execute(requests: Request[]): Promise<Response[]> {
    let result: ReturnType<InProcessInstance['call']>;
    try {
      result = this.call(requests);
    } catch (err) {
      return Promise.reject(err);
    }
    const check = (value: Response[] | AsyncIterable<StreamItem>): Response[] => {
      if (isAsyncIterable<StreamItem>(value)) {
        throw new TritonError('INFERENCE_FAILED', `instance ${this.name}: the callable streams responses, which only a decoupled model can answer`);
      }
      return checkResponses(value, requests.length, this.name);
    };
    return isThenable(result) ? Promise.resolve(result).then(check) : new Promise((resolve) => resolve(check(result)));
  }

  /** Streams a decoupled batch: the callable's items as they come, or one final response per request. */
  async *stream(requests: Request[]): AsyncIterable<StreamItem> {
    const result = await this.call(requests);
    if (isAsyncIterable<StreamItem>(result)) {
      yield* result;
      return;
    }
    const responses = checkResponses(result, requests.length, this.name);
    for (let index = 0; index < responses.length; index++) yield { index, response: responses[index], final: true };
  }

  private call(requests: Request[]): Promise<Response[] | AsyncIterable<StreamItem>> | Response[] {
    const loaded = this.loaded;
    if (!loaded || this.state === 'closed') {
      throw new TritonError('UNAVAILABLE', `instance ${this.name} is ${this.state === 'closed' ? 'closed' : 'not started'}`);
    }
    // A decoupled model's callable returns an async iterable instead of an array.
    return loaded.callable(requests, this.context) as unknown as Promise<Response[] | AsyncIterable<StreamItem>>;
  }

  /** Awaits the object's `finalize()` if `start()` completed; idempotent. */
  close(): Promise<void> {
    this.closing ??= this.finalize();
    return this.closing;
  }

  onHealthChange(listener: (event: HealthEvent) => void): () => void {
    return this.health.add(listener);
  }

  private async finalize(): Promise<void> {
    const started = this.state === 'ready';
    this.state = 'closing';
    this.health.emit({ instance: this.name, healthy: false });
    try {
      if (started) await this.loaded?.finalize?.();
    } finally {
      this.state = 'closed';
    }
  }
}


function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
