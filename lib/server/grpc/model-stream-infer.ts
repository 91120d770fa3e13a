import type { handleBidiStreamingCall } from '@grpc/grpc-js';
import { TritonError, toTritonError } from '../../errors';
import type { TrackedCall } from './call-tracker';
import { stoppingError, type GrpcContext } from './grpc-context';
import { toGrpcStatus } from './grpc-status';
import { decodeGrpcInfer, encodeGrpcInfer } from './infer-codec';
import type { InferParameterMap, ModelInferRequestMessage, ModelInferResponseMessage, ModelStreamInferResponseMessage } from './messages';

/** Every response of a non-decoupled model is its request's last: perf_analyzer and tritonclient read this flag. */
const FINAL: InferParameterMap = { triton_final_response: { bool_param: true } };

/**
 * The ModelStreamInfer RPC for non-decoupled models: each request on the stream is independent and gets
 * exactly one response, in completion order, matched by `id`. A failed request gets `error_message` and
 * the stream stays open. The stream ends once the client has half-closed and every response is written;
 * a client cancel aborts every request still running.
 */
export function modelStreamInfer(ctx: GrpcContext): handleBidiStreamingCall<ModelInferRequestMessage, ModelStreamInferResponseMessage> {
  return (call) => {
    if (!ctx.tracker.accepting) {
      call.emit('error', toGrpcStatus(stoppingError()));
      return;
    }
    const pending = new Set<AbortController>();
    let clientDone = false;
    let closed = false;
    const close = (): void => {
      closed = true;
      ctx.tracker.delete(tracked);
    };
    const tracked: TrackedCall = {
      fail(err) {
        if (closed) return;
        close();
        for (const a of pending) a.abort(err);
        pending.clear();
        call.emit('error', toGrpcStatus(err));
      },
    };
    ctx.tracker.add(tracked);
    const endIfDone = (): void => {
      if (clientDone && pending.size === 0 && !closed) {
        close();
        call.end();
      }
    };
    const write = (msg: ModelStreamInferResponseMessage): void => {
      if (!closed) call.write(msg);
    };

    call.on('data', (msg: ModelInferRequestMessage) => {
      if (closed) return;
      const abort = new AbortController();
      pending.add(abort);
      answer(ctx, msg, abort.signal).then((response) => {
        pending.delete(abort);
        write(response);
        endIfDone();
      });
    });
    call.on('end', () => {
      clientDone = true;
      endIfDone();
    });
    // grpc-js also emits 'cancelled' when a finished stream closes; then nothing is pending.
    call.on('cancelled', () => {
      if (closed && pending.size === 0) return;
      close();
      const err = new TritonError('CANCELLED', 'the client cancelled the stream');
      for (const a of pending) a.abort(err);
      pending.clear();
    });
    // A broken stream also emits 'cancelled'; this listener only keeps the error from being thrown.
    call.on('error', () => undefined);
  };
}

/** Runs one request of the stream; never rejects: failures become `error_message` responses. */
async function answer(ctx: GrpcContext, msg: ModelInferRequestMessage, signal: AbortSignal): Promise<ModelStreamInferResponseMessage> {
  try {
    const model = ctx.core.repository.get(msg.model_name, msg.model_version);
    if (model.config.decoupled) {
      throw new TritonError('UNSUPPORTED', `model '${model.name}' is decoupled; decoupled models are not supported by this server`);
    }
    const response = await ctx.core.infer(decodeGrpcInfer(msg, model, signal));
    return { error_message: '', infer_response: encodeGrpcInfer(response, FINAL) };
  } catch (err) {
    const failed: ModelInferResponseMessage = {
      model_name: msg.model_name,
      model_version: msg.model_version ?? '',
      id: msg.id ?? '',
      parameters: FINAL,
      outputs: [],
      raw_output_contents: [],
    };
    return { error_message: toTritonError(err).message, infer_response: failed };
  }
}
