import type { InferCall } from '../callable/callable';
import { ClientError } from '../client/client-error';
import { ModelClient } from '../client/model-client';
import { TritonError, type ErrorCode } from '../base/errors';
import type { Tensor } from '../tensor/tensor';
import type { TraceParent } from '../tracing/trace';

/** Clients for models on other servers, reused across calls (one per URL, model and version). */
export class RemoteModels {
  private readonly clients = new Map<string, { client: ModelClient; batching?: boolean }>();

  /**
   * Runs a call on a remote model; errors name the caller, the callee and where it lives. `trace` goes along as
   * the W3C `traceparent`/`tracestate` headers (gRPC metadata), so the remote server's span joins the caller's trace.
   */
  async infer(call: InferCall, signal: AbortSignal, caller: string, trace?: TraceParent): Promise<Record<string, Tensor>> {
    const url = call.url as string;
    const key = `${url}\u0000${call.modelName}\u0000${call.modelVersion ?? ''}`;
    let entry = this.clients.get(key);
    if (!entry) this.clients.set(key, (entry = { client: new ModelClient(url, call.modelName, { modelVersion: call.modelVersion }) }));
    const headers = trace && { traceparent: trace.traceparent, ...(trace.tracestate && { tracestate: trace.tracestate }) };
    const options = { signal, parameters: call.parameters, outputs: call.requestedOutputs, ...(headers && { headers }) };
    try {
      if (entry.batching === undefined) entry.batching = ((await entry.client.modelConfig({ signal })).max_batch_size as number) > 0;
      return entry.batching ? await entry.client.inferBatch(call.inputs, options) : await entry.client.inferSample(call.inputs, options);
    } catch (err) {
      const code: ErrorCode = err instanceof ClientError ? err.code : 'INFERENCE_FAILED';
      throw new TritonError(code, `model '${caller}' calling '${call.modelName}' at ${url}: ${(err as Error).message}`, { cause: err });
    }
  }

  close(): void {
    for (const { client } of this.clients.values()) client.close();
    this.clients.clear();
  }
}
