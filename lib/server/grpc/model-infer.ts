import type { handleUnaryCall } from '@grpc/grpc-js';
import { Cancellation } from '../../base/cancellation';
import { TritonError } from '../../base/errors';
import type { TrackedCall } from './call-tracker';
import type { DirectUnaryCall } from './direct-unary';
import { stoppingError, type GrpcContext } from './grpc-context';
import { toGrpcStatus } from './grpc-status';
import { decodeGrpcInfer, encodeGrpcInfer, grpcOutputHandling, parseModelInferRequest } from './infer-codec';
import type { InferCall } from '../infer-entry';
import type { OutputHandling } from '../infer-request';

import type { ModelInferRequestMessage, ModelInferResponseMessage } from '../../protocol/messages';

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
    let outputHandling: Map<string, OutputHandling> | undefined;
    const direct = call as Partial<Pick<DirectUnaryCall<unknown>, 'requestMemory' | 'memory'>>;
    let msg: ModelInferRequestMessage;
    try {
      msg = parseModelInferRequest(call.request, direct.requestMemory?.());
    } catch (err) {
      return settle(err);
    }
    const shm = ctx.core.sharedMemory;
    const inferCall: InferCall = {
      modelName: msg.model_name,
      modelVersion: msg.model_version,
      protocol: 'GRPC',
      unaryEndpoint: 'ModelInfer RPC',
      headers: call.metadata.getMap(),
      decode: (model) => {
        const request = decodeGrpcInfer(msg, model, abort, callDeadline(call), shm, direct.memory);
        outputHandling = grpcOutputHandling(msg, model, shm);
        return request;
      },
    };
    // The answer is encoded as the response is handed over; the span is reported sent once it is.
    ctx.core.inferAsync(inferCall, (response) => settle(undefined, encodeGrpcInfer(response, undefined, outputHandling, shm))).catch(settle);
  };
}

/** The call's gRPC deadline in ms since the epoch, or undefined when it has none. */
export function callDeadline(call: { getDeadline(): Date | number }): number | undefined {
  const d = call.getDeadline();
  const ms = d instanceof Date ? d.getTime() : d;
  return Number.isFinite(ms) ? ms : undefined;
}
