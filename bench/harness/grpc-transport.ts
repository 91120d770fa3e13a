/**
 * Unary calls on one grpc-js channel (as tritonclient and perf_analyzer use one), a lane being one outstanding
 * call: each sends pre-serialized request bytes and takes the response bytes without decoding them, so that
 * the client's cost per call is grpc-js's alone.
 */
import * as grpc from '@grpc/grpc-js';
import type { Transport } from './load-driver';

const passThrough = (b: Buffer): Buffer => b;

/** Calls of `method` (its path) on 127.0.0.1:`port`, sending `requests` (serialized messages) in turn. */
export function grpcTransport(port: number, method: string, requests: readonly Buffer[]): Transport {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
  });
  return {
    requests: requests.length,
    close: () => client.close(),
    open(events) {
      let closed = false;
      // The channel queues calls until it is connected: a lane can send at once.
      queueMicrotask(() => events.ready());
      return {
        send(index) {
          client.makeUnaryRequest(method, passThrough, passThrough, requests[index] as Buffer, (err) => {
            if (!closed) events.answered(err ? `${err.code} ${err.details}` : undefined);
          });
        },
        close: () => void (closed = true),
      };
    },
  };
}
