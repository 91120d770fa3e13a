import type * as http2 from 'node:http2';
import { GrpcStatus } from '../../base/errors';
import { RequestMemory, type BufferLease, type BufferPool } from '../../tensor/buffer-pool';
import type { CallHeaders } from './call-headers';
import { statusOf } from './grpc-status';
import { releaseOnceSent } from './on-the-wire';
import { ServerCall, type CallLimits, type FramedMessage } from './server-call';

/** What a unary handler answers with: a status, or null and the response. */
export type UnaryCallback<Res> = (err: { code?: number; details?: string } | null, value?: Res) => void;

/** A handler of a unary RPC, written against grpc-js's call (the part of it our handlers use). */
export type UnaryHandler<Res, Req = Buffer> = (call: DirectUnaryCall<Res, Req>, callback: UnaryCallback<Res>) => void;

/** How a unary method reads and writes its messages. */
export interface DirectUnaryMethod<Res, Req = Buffer> extends CallLimits {
  /** The method's full path, `/package.Service/Method`. */
  path: string;
  handler: UnaryHandler<Res, Req>;
  /** The request from its message's bytes (a throw ends the call with INTERNAL); the bytes themselves without it. */
  decode?(bytes: Buffer): Req;
  /** The response as a gRPC length-prefixed message, in pieces to write in order. */
  encode(value: Res): FramedMessage;
  /**
   * Where large request messages are received. Each call gets a RequestMemory (`memory`), released once a
   * message answer is written: the handler must be done with the request when it answers with a message. An
   * error status keeps its buffers out of the pool, since work on the request may still be running.
   */
  buffers?: BufferPool;
}

/**
 * One unary call, without grpc-js: the request message is copied once, from the frames as they arrive, into a
 * buffer of its own (pooled for a large one), and the response's pieces are written as they are (grpc-js copies
 * the message into a new buffer behind the frame header). On 4 MB tensors each copy is a 4 MB allocation for the
 * garbage collector; see docs/grpc.md. The handler runs once the client has half-closed after one message.
 */
export class DirectUnaryCall<Res, Req = Buffer> extends ServerCall {
  request: Req = EMPTY as Req;
  /** The pooled memory of this call's request, when the method has a pool. */
  readonly memory: RequestMemory | undefined;
  /** The request message's bytes, and whether they are in a buffer this call alone holds. */
  private bytes: Buffer | undefined;
  private ownBytes = false;
  /** The request message's pooled buffer, when it has one. */
  private lease: BufferLease | undefined;

  constructor(
    stream: http2.ServerHttp2Stream,
    headers: CallHeaders,
    private readonly method: DirectUnaryMethod<Res, Req>,
  ) {
    super(stream, headers, { path: method.path, maxReceive: method.maxReceive, encoding: headers.encoding, single: true });
    this.memory = method.buffers && new RequestMemory(method.buffers);
  }

  /**
   * The ArrayBuffer that holds the request message and nothing anyone else reads, when the message is large
   * enough to have one: its decoder may move bytes within it, and a worker instance may take it.
   */
  requestMemory(): ArrayBuffer | undefined {
    if (this.lease) return this.lease.arrayBuffer;
    // Buffer.allocUnsafe gives a buffer this large an ArrayBuffer of its own.
    return this.ownBytes && this.bytes !== undefined && this.bytes.length >= OWN_BUFFER_BYTES ? (this.bytes.buffer as ArrayBuffer) : undefined;
  }

  allocate(framedLength: number): Buffer | undefined {
    this.lease = this.memory?.lease(framedLength);
    return this.lease?.bytes;
  }

  onMessage(bytes: Buffer, own: boolean): void {
    this.bytes = bytes;
    this.ownBytes = own;
  }

  onHalfClose(): void {
    const bytes = this.bytes;
    // A message cut short counts as none, as in grpc-js.
    if (bytes === undefined || this.reader.midMessage) {
      return this.sendStatus({ code: GrpcStatus.UNIMPLEMENTED, details: `Received no request message for server streaming method ${this.method.path}` });
    }
    try {
      this.request = this.method.decode ? this.method.decode(bytes) : (bytes as Req);
    } catch {
      return this.sendStatus({ code: GrpcStatus.INTERNAL, details: 'Error deserializing request' });
    }
    try {
      this.method.handler(this, (err, value) => {
        if (err) this.sendStatus(statusOf(err));
        else this.sendMessage(value as Res);
      });
    } catch {
      this.sendStatus({ code: GrpcStatus.UNKNOWN, details: 'Unknown error' });
    }
  }

  private sendMessage(value: Res): void {
    if (this.finished()) return;
    let message: FramedMessage;
    try {
      message = this.method.encode(value);
    } catch (err) {
      this.sendStatus({ code: GrpcStatus.INTERNAL, details: `failed to encode the response: ${(err as Error).message}` });
      return;
    }
    // One flush for the message and the end of the stream.
    this.stream.cork();
    this.writeMessage(message, this.method.maxSend);
    this.sendStatus({ code: GrpcStatus.OK, details: 'OK' });
    this.stream.uncork();
    // node:http2 sends from the message's buffers after its write has finished: they, and the request's memory
    // (which an output may view), are held until the bytes have left (on-the-wire.ts). A message over the limit
    // was not sent, and its request's memory stays out of the pool, as with any error status.
    const memory = this.memory;
    const sent = this.method.maxSend === -1 || message.messageLength <= this.method.maxSend;
    releaseOnceSent(this.stream, message.pieces, sent && memory?.holding ? () => memory.release() : undefined);
  }
}

const EMPTY = Buffer.alloc(0);
/** Buffer.allocUnsafe's pool serves up to half its 8 KiB; a message this large has its ArrayBuffer to itself. */
const OWN_BUFFER_BYTES = 64 * 1024;
