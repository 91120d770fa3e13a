import type { handleUnaryCall } from '@grpc/grpc-js';
import { Cancellation } from '../../cancellation';
import { forwardHeaders } from '../forward-headers';
import { withTraceContext } from '../trace-context';
import { TritonError } from '../../errors';
import type { InferenceResponse } from '../../model/inference';
import type { TrackedCall } from './call-tracker';
import type { DirectUnaryCall } from './direct-unary';
import { stoppingError, type GrpcContext } from './grpc-context';
import { toGrpcStatus } from './grpc-status';
import { decodeGrpcInfer, encodeGrpcInfer, grpcOutputHandling, parseModelInferRequest } from './infer-codec';
import { inferModel, type OutputHandling } from '../infer-request';

import type { ModelInferResponseMessage } from '../../protocol/messages';

/**
 * The unary ModelInfer RPC: parse the received bytes, decode, run through the server core (validation, queueing,
 * batching, as over HTTP), encode. A client cancel or deadline aborts the request's signal.
 */
export function modelInfer(ctx: GrpcContext): handleUnaryCall<Buffer, ModelInferResponseMessage> {
  return (call, callback) => {
    const abort = new Cancellation();
    let settled = false;
    const settle = (err: unknown, value?: ModelInferResponseMessage): void => {
      if (settled) return;
      settled = true;
      ctx.tracker.delete(tracked);
      call.off('cancelled', onCancelled);
      if (value) callback(null, value);
      else callback(toGrpcStatus(err));
    };
    const tracked: TrackedCall = {
      fail(err) {
        abort.abort(err);
        settle(err);
      },
    };
    // grpc-js emits 'cancelled' whenever the stream closes, answered or not: only an unanswered call is cancelled.
    const onCancelled = (): void => {
      if (settled) return;
      // grpc-js has already ended the call; nothing more is written.
      settled = true;
      ctx.tracker.delete(tracked);
      abort.abort(new TritonError('CANCELLED', 'the client cancelled the call'));
    };
    if (!ctx.tracker.accepting) return settle(stoppingError());
    ctx.tracker.add(tracked);
    call.once('cancelled', onCancelled);
    let pending: Promise<InferenceResponse>;
    let outputHandling: Map<string, OutputHandling> | undefined;
    try {
      const direct = call as Partial<Pick<DirectUnaryCall<unknown>, 'requestMemory' | 'memory'>>;
      const msg = parseModelInferRequest(call.request, direct.requestMemory?.());
      const model = inferModel(ctx.core, msg.model_name, msg.model_version, 'ModelInfer RPC');
      const request = decodeGrpcInfer(msg, model, abort, callDeadline(call), ctx.core.sharedMemory, direct.memory);
      outputHandling = grpcOutputHandling(msg, model, ctx.core.sharedMemory);
      forwardHeaders(request.parameters as Record<string, unknown>, Object.entries(call.metadata.getMap()), ctx.forwardHeader);
      pending = ctx.core.infer(withTraceContext(request, call.metadata.get('traceparent'), call.metadata.get('tracestate')), model);
    } catch (err) {
      return settle(err);
    }
    pending.then(
      (response) => {
        let msg: ModelInferResponseMessage;
        try {
          msg = encodeGrpcInfer(response, undefined, outputHandling, ctx.core.sharedMemory);
        } catch (err) {
          return settle(err);
        }
        settle(undefined, msg);
        response.span?.sent('GRPC');
      },
      (err: unknown) => settle(err),
    );
  };
}

/** The call's gRPC deadline in ms since the epoch, or undefined when it has none. */
export function callDeadline(call: { getDeadline(): Date | number }): number | undefined {
  const d = call.getDeadline();
  const ms = d instanceof Date ? d.getTime() : d;
  return Number.isFinite(ms) ? ms : undefined;
}
