import type { handleBidiStreamingCall } from '@grpc/grpc-js';
import { Cancellation } from '../../base/cancellation';
import { TritonError, toTritonError } from '../../base/errors';
import type { TrackedCall } from './call-tracker';
import { ResponseOrder, type Place } from './response-order';
import { stoppingError, type GrpcContext } from './grpc-context';
import { toGrpcStatus } from './grpc-status';
import { decodeGrpcInfer, encodeGrpcInfer, grpcOutputHandling, parseModelInferRequest } from './infer-codec';
import type { InferCall } from '../infer-entry';
import type { OutputHandling } from '../infer-request';
import type { InferParameterMap, ModelInferRequestMessage, ModelInferResponseMessage, ModelStreamInferResponseMessage } from '../../protocol/messages';

/** Every response of a non-decoupled model is its request's last: perf_analyzer and tritonclient read this flag. */
const FINAL: InferParameterMap = { triton_final_response: { bool_param: true } };
const NOT_FINAL: InferParameterMap = { triton_final_response: { bool_param: false } };

/**
 * The ModelStreamInfer RPC: each request on the stream is independent and matched by `id`. A request of a
 * non-decoupled model gets exactly one response, in request order (`ResponseOrder`); a decoupled model's request
 * gets each response as it is produced (`triton_final_response` false), and the last one carries the flag true —
 * as an empty response only when the request set `triton_enable_empty_final_response`. A failed request gets
 * `error_message` and the stream stays open. The stream ends once the client has half-closed and every request is
 * answered; a client cancel aborts every request still running (a decoupled model's generator is closed), and drops
 * the answers held for request order. A message that is not a ModelInferRequest at all ends the stream with
 * INVALID_ARGUMENT once the requests before it are answered; what follows it is not read.
 */
export function modelStreamInfer(ctx: GrpcContext): handleBidiStreamingCall<Buffer, ModelStreamInferResponseMessage> {
  return (call) => {
    if (!ctx.tracker.accepting) {
      call.emit('error', toGrpcStatus(stoppingError()));
      return;
    }
    const pending = new Set<Cancellation>();
    let clientDone = false;
    let closed = false;
    /** Set by a malformed message: the stream's status once the requests before it are answered. */
    let malformed: TritonError | undefined;
    let drainWaiters: (() => void)[] = [];
    const releaseWriters = (): void => {
      const waiters = drainWaiters;
      drainWaiters = [];
      for (const w of waiters) w();
    };
    call.on('drain', releaseWriters);
    const close = (): void => {
      closed = true;
      ctx.tracker.delete(tracked);
      order.clear();
      releaseWriters();
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
      if (closed || pending.size > 0) return;
      if (malformed) {
        close();
        // Ends the call after the responses already written, with this status.
        call.emit('error', toGrpcStatus(malformed));
      } else if (clientDone) {
        close();
        call.end();
      }
    };
    // A full write buffer (the client reads slowly: HTTP/2 flow control) returns a promise that settles on
    // 'drain' or close; a decoupled request awaits it, which pauses its model through its bounded response stream.
    const write = (msg: ModelStreamInferResponseMessage): Promise<void> | undefined => {
      if (closed || call.write(msg)) return undefined;
      return new Promise<void>((resolve) => drainWaiters.push(resolve));
    };
    const order = new ResponseOrder(write);

    call.on('data', (bytes: Buffer) => {
      if (closed || malformed) return;
      let msg: ModelInferRequestMessage;
      try {
        msg = parseModelInferRequest(bytes);
      } catch (err) {
        malformed = toTritonError(err, 'INVALID_ARGUMENT');
        endIfDone();
        return;
      }
      const abort = new Cancellation();
      pending.add(abort);
      // Taken as the request arrives, before any stage can answer it: the place fixes when its answer may go.
      const place = order.enter();
      answer(ctx, msg, abort, order, place, call.metadata.getMap()).then(() => {
        order.done(place);
        pending.delete(abort);
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

/**
 * Runs one request of the stream, writing its response(s) at its `place` in the stream's order; never rejects:
 * failures become `error_message` responses. While the request runs, this keeps what writing its answers needs (the
 * names and id an empty response carries, how its outputs are written), and not the message: the message is held by
 * the call's `decode` alone, and a front-end thread lets the call go once it has handed the decoded request to the
 * core thread. Under a flood of requests that wait long in the core (sequences backlogged behind their slots), a
 * front-end thread otherwise kept every message of the stream, and the bytes it arrived in, until its answer.
 */
function answer(
  ctx: GrpcContext,
  msg: ModelInferRequestMessage,
  cancellation: Cancellation,
  order: ResponseOrder<ModelStreamInferResponseMessage>,
  place: Place,
  metadata: Record<string, string | Buffer>,
): Promise<void> {
  const write = (m: ModelStreamInferResponseMessage): Promise<void> | undefined => order.write(place, m);
  const shm = ctx.core.sharedMemory;
  const head: ResponseHead = { model_name: msg.model_name, model_version: msg.model_version ?? '', id: msg.id ?? '' };
  const emptyFinal = msg.parameters?.triton_enable_empty_final_response?.bool_param === true;
  const decoded: Decoded = {};
  // Known once the model is: a decoupled model's responses go out as produced (Triton orders only the others), a
  // failure to decode its request included, and the requests behind it stop waiting for it.
  const call = streamCall(msg, cancellation, metadata, shm, () => order.leave(place), decoded);
  let running: Promise<void>;
  try {
    // Each response as it comes; a response without outputs (a decoupled model's closing one) is sent only when asked for.
    running = ctx.core.inferAsync(call, (response, final) => {
      if (response.outputs.length > 0) return write({ error_message: '', infer_response: encodeGrpcInfer(response, final ? FINAL : NOT_FINAL, decoded.outputHandling, shm) });
      if (final && emptyFinal) return write({ error_message: '', infer_response: emptyResponse(head, FINAL, decoded.version) });
      return undefined;
    });
  } catch (err) {
    running = Promise.reject(err);
  }
  return running.catch((err: unknown) => void write({ error_message: toTritonError(err).message, infer_response: emptyResponse(head, FINAL) }));
}

/** What a request's empty response carries of its message. */
type ResponseHead = Pick<ModelInferResponseMessage, 'model_name' | 'model_version' | 'id'>;

/** What decoding a request tells its responses: how its outputs are written, and the version that runs it. */
interface Decoded {
  outputHandling?: Map<string, OutputHandling>;
  version?: string;
}

/** The call of one request of the stream; its `decode` is the only holder of the message, and fills in `decoded`. */
function streamCall(
  msg: ModelInferRequestMessage,
  cancellation: Cancellation,
  metadata: Record<string, string | Buffer>,
  shm: GrpcContext['core']['sharedMemory'],
  streamed: () => void,
  decoded: Decoded,
): InferCall {
  return {
    modelName: msg.model_name,
    modelVersion: msg.model_version,
    protocol: 'GRPC',
    headers: metadata,
    streamed,
    decode: (model) => {
      const request = decodeGrpcInfer(msg, model, cancellation, undefined, shm);
      decoded.outputHandling = grpcOutputHandling(msg, model, shm);
      decoded.version = model.version;
      return request;
    },
  };
}

/** A response without outputs; the empty final response names the version that ran, as Triton does, not the one asked for ('' = latest). */
function emptyResponse(head: ResponseHead, parameters: InferParameterMap, version = head.model_version): ModelInferResponseMessage {
  return { model_name: head.model_name, model_version: version, id: head.id, parameters, outputs: [], raw_output_contents: [] };
}
