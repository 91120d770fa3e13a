import type { handleUnaryCall } from '@grpc/grpc-js';
import { TritonError } from '../../errors';
import type { TrackedCall } from './call-tracker';
import { stoppingError, type GrpcContext } from './grpc-context';
import { toGrpcStatus } from './grpc-status';
import { decodeGrpcInfer, encodeGrpcInfer } from './infer-codec';
import type { ModelInferRequestMessage, ModelInferResponseMessage } from './messages';

/**
 * The unary ModelInfer RPC: decode, run through the server core (validation, queueing, batching, as over
 * HTTP), encode. A client cancel or deadline aborts the request's signal.
 */
export function modelInfer(ctx: GrpcContext): handleUnaryCall<ModelInferRequestMessage, ModelInferResponseMessage> {
  return (call, callback) => {
    const abort = new AbortController();
    let settled = false;
    const settle = (err: unknown, value?: ModelInferResponseMessage): void => {
      if (settled) return;
      settled = true;
      ctx.tracker.delete(tracked);
      if (value) callback(null, value);
      else callback(toGrpcStatus(err));
    };
    const tracked: TrackedCall = {
      fail(err) {
        abort.abort(err);
        settle(err);
      },
    };
    if (!ctx.tracker.accepting) return settle(stoppingError());
    ctx.tracker.add(tracked);
    call.once('cancelled', () => {
      // grpc-js has already ended the call; nothing more is written.
      settled = true;
      ctx.tracker.delete(tracked);
      abort.abort(new TritonError('CANCELLED', 'the client cancelled the call'));
    });
    run(ctx, call.request, abort.signal).then(
      (response) => settle(undefined, response),
      (err: unknown) => settle(err),
    );
  };
}

async function run(ctx: GrpcContext, msg: ModelInferRequestMessage, signal: AbortSignal): Promise<ModelInferResponseMessage> {
  const model = ctx.core.repository.get(msg.model_name, msg.model_version);
  if (model.config.decoupled) {
    throw new TritonError('UNSUPPORTED', "ModelInfer RPC doesn't support models with decoupled transaction policy");
  }
  const response = await ctx.core.infer(decodeGrpcInfer(msg, model, signal));
  return encodeGrpcInfer(response);
}
