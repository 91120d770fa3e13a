import { Cancellation } from '../base/cancellation';
import type { InferCall } from '../callable/callable';
import { TritonError, toTritonError } from '../base/errors';
import type { InferenceRequest, InferenceResponse } from '../model/inference';
import type { Model } from '../model/model';
import { refuseDecoupled, type BlsHandler } from '../model/request-pipeline';
import type { ModelRepository } from '../model/model-repository';
import type { Tensor } from '../tensor/tensor';
import type { TraceParent } from '../tracing/trace';
import { RemoteModels } from './remote-models';

/**
 * Serves `request.infer(...)`, the calls a model makes to other models: a bound model through its own
 * scheduler (as the caller's own request: its call chain, its cancellation), or a model on another server
 * through a client. It refuses the call that would deadlock.
 */
export class BlsRouter {
  private readonly remote = new RemoteModels();

  /** `infer` runs a request on a model already looked up (the server's, so that it counts as in flight). */
  constructor(
    private readonly repository: ModelRepository,
    private readonly infer: (request: InferenceRequest, model: Model) => Promise<InferenceResponse>,
  ) {}

  /** `trace` is the caller's span when it is traced: the callee's span (here or on the remote server) becomes its child. */
  readonly handle: BlsHandler = async (call, chain, caller, trace) => {
    const callerName = chain[chain.length - 1] ?? '';
    // The call ends with its caller, or when the callable's own signal for it fires.
    const cancellation = new Cancellation();
    const unlinkCaller = cancellation.link(caller);
    const unlinkCall = call.signal ? cancellation.link(call.signal) : undefined;
    try {
      if (call.url) return await this.remote.infer(call, cancellation.signal, callerName, trace);
      return await this.local(call, chain, cancellation, callerName, trace);
    } finally {
      unlinkCaller();
      unlinkCall?.();
    }
  };

  /** Clients of remote models are closed. */
  close(): void {
    this.remote.close();
  }

  private async local(call: InferCall, chain: readonly string[], cancellation: Cancellation, callerName: string, trace: TraceParent | undefined): Promise<Record<string, Tensor>> {
    const model = this.repository.get(call.modelName, call.modelVersion);
    refuseDecoupled(model, `model '${callerName}' calling '${model.name}': request.infer()`);
    // The simple deadlock: every execution slot of the callee is held by a caller up this very chain.
    const held = chain.filter((name) => name === model.name).length;
    const capacity = model.instances.reduce((n, i) => n + (i.maxConcurrency ?? 1), 0);
    if (held > 0 && held >= capacity) {
      throw new TritonError(
        'INVALID_ARGUMENT',
        `model '${callerName}' calls '${model.name}', whose ${capacity} instance(s) are all held by its callers (${chain.join(' -> ')}); ` +
          'this would deadlock: give it more instances or do not call it from itself',
      );
    }
    try {
      const response = await this.infer(
        {
          modelName: model.name,
          modelVersion: model.version,
          id: '',
          inputs: Object.entries(call.inputs).map(([name, tensor]) => ({ name, tensor })),
          requestedOutputs: call.requestedOutputs,
          parameters: call.parameters ?? {},
          ...(call.sequence && { sequence: call.sequence }),
          cancellation,
          chain,
          ...(trace && { traceParent: trace }),
        },
        model,
      );
      return Object.fromEntries(response.outputs.map((o) => [o.name, o.tensor]));
    } catch (err) {
      const e = toTritonError(err, 'INFERENCE_FAILED');
      throw new TritonError(e.code, `model '${callerName}' calling '${model.name}': ${e.message}`, { cause: err });
    }
  }
}
