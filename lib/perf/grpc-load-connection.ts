import * as grpc from '@grpc/grpc-js';
import type { ConnectionTarget } from './connection-target';
import type { LoadConnection } from './load-connection';

const INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';
const STREAM_INFER_PATH = '/inference.GRPCInferenceService/ModelStreamInfer';

/** Requests are serialized ModelInferRequest messages already; answers are only checked, never decoded. */
const asIs = (b: Buffer): Buffer => b;

/** A gRPC channel of a load thread, insecure or TLS, and the metadata its calls carry. */
export class GrpcLoadChannel {
  readonly client: grpc.Client;
  readonly metadata: grpc.Metadata;

  constructor(target: ConnectionTarget) {
    const t = target.tls;
    const credentials = t
      ? grpc.credentials.createSsl(pem(t.ca), pem(t.key), pem(t.cert))
      : grpc.credentials.createInsecure();
    this.client = new grpc.Client(`${target.host}:${target.port}`, credentials, {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
    });
    this.metadata = new grpc.Metadata();
    for (const [k, v] of Object.entries(target.metadata ?? {})) this.metadata.set(k, v);
  }

  /** A connection that sends each request as its own ModelInfer call on this channel. */
  unary(): LoadConnection {
    return {
      send: (request, done) => {
        this.client.makeUnaryRequest(INFER_PATH, asIs, asIs, request as Buffer, this.metadata, (err) => done(err ? `${grpc.status[err.code] ?? err.code}: ${err.details}` : undefined));
      },
      close: () => undefined,
    };
  }

  /** A connection that is one ModelStreamInfer stream: a request is done at its (first) response. */
  stream(): LoadConnection {
    return new GrpcStreamConnection(this);
  }

  close(): void {
    this.client.close();
  }
}

/** One ModelStreamInfer stream carrying one request at a time; opened at the first request, and again after it ends. */
class GrpcStreamConnection implements LoadConnection {
  private call: grpc.ClientDuplexStream<Buffer, Buffer> | undefined;
  private done: ((problem?: string) => void) | undefined;

  constructor(private readonly channel: GrpcLoadChannel) {}

  send(request: Uint8Array, done: (problem?: string) => void): void {
    this.done = done;
    (this.call ?? this.open()).write(request as Buffer);
  }

  close(): void {
    const call = this.call;
    this.call = undefined;
    call?.end();
  }

  private open(): grpc.ClientDuplexStream<Buffer, Buffer> {
    const call = this.channel.client.makeBidiStreamRequest(STREAM_INFER_PATH, asIs, asIs, this.channel.metadata);
    call.on('data', (message: Buffer) => this.finish(streamError(message)));
    call.on('error', (err: grpc.ServiceError) => {
      if (this.call === call) this.call = undefined;
      this.finish(`${grpc.status[err.code] ?? err.code}: ${err.details}`);
    });
    call.on('end', () => {
      if (this.call === call) this.call = undefined;
      this.finish('the server ended the stream');
    });
    this.call = call;
    return call;
  }

  private finish(problem: string | undefined): void {
    const done = this.done;
    this.done = undefined;
    done?.(problem);
  }
}

/**
 * The `error_message` of a serialized ModelStreamInferResponse, if it has one: field 1, written first by every
 * protobuf encoder, so only the message's first bytes are read.
 */
function streamError(message: Buffer): string | undefined {
  if (message.length < 2 || message[0] !== 0x0a) return undefined;
  let length = 0;
  let shift = 0;
  let pos = 1;
  for (; pos < message.length; pos++) {
    const byte = message[pos] as number;
    length |= (byte & 0x7f) << shift;
    shift += 7;
    if (byte < 0x80) break;
  }
  return length > 0 ? message.toString('utf8', pos + 1, pos + 1 + length) : undefined;
}

function pem(text: string | undefined): Buffer | null {
  return text === undefined ? null : Buffer.from(text);
}
