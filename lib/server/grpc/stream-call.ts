import type * as http2 from 'node:http2';
import { GrpcStatus } from '../../base/errors';
import type { CallHeaders } from './call-headers';
import { statusOf, type GrpcCallStatus } from './grpc-status';
import { ServerCall, type CallLimits, type FramedMessage } from './server-call';

/** A handler of a streaming RPC, written against grpc-js's stream call (the part of it our handlers use). */
export type StreamHandler<Res, Req = Buffer> = (call: StreamCall<Res, Req>) => void;

/** How a streaming method reads and writes its messages. */
export interface StreamMethod<Res, Req = Buffer> extends CallLimits {
  /** The method's full path, `/package.Service/Method`. */
  path: string;
  /** `bidi`: messages both ways; `server`: one request message, then the responses. */
  kind: 'bidi' | 'server';
  handler: StreamHandler<Res, Req>;
  /** A request from its message's bytes (a throw ends the call with INTERNAL); the bytes themselves without it. */
  decode?(bytes: Buffer): Req;
  /** A response as a gRPC length-prefixed message. */
  encode(value: Res): FramedMessage;
}

/**
 * Responses a call may have written that the stream has not yet taken before `write` answers false: grpc-js's
 * stream calls are object-mode streams with the default high-water mark of 16.
 */
const WRITE_HIGH_WATER_MARK = 16;

/**
 * One call of a streaming method, with the surface of grpc-js's stream call that its handlers use: 'data' for each
 * request and 'end' when the client half-closes (bidirectional), or `request` (server streaming); `write()`,
 * which answers false while the stream's buffer is full and then emits 'drain'; `end()`, which ends the call with
 * OK after the responses written; `emit('error', status)`, which ends it with that status instead; and 'cancelled'
 * once the call is over. A bidirectional call's handler runs at once; a server-streaming call's once its request
 * has arrived.
 */
export class StreamCall<Res, Req = Buffer> extends ServerCall {
  /** A server-streaming call's request. */
  request: Req | undefined;
  private status: GrpcCallStatus = { code: GrpcStatus.OK, details: 'OK' };
  private ending = false;
  /** Responses written that the stream has not yet taken, and whether a 'drain' is owed. */
  private unsent = 0;
  private owesDrain = false;

  constructor(
    stream: http2.ServerHttp2Stream,
    headers: CallHeaders,
    private readonly method: StreamMethod<Res, Req>,
  ) {
    super(stream, headers, { path: method.path, maxReceive: method.maxReceive, encoding: headers.encoding, single: method.kind === 'server' });
    // As in grpc-js: an 'error' emitted on the call by its handler ends it with that status.
    this.on('error', (err: unknown) => {
      this.status = statusOf(err);
      this.end();
    });
    if (method.kind === 'bidi') this.runHandler();
  }

  /** Writes a response; false when the call should wait for 'drain' before writing more. */
  write(value: Res): boolean {
    if (this.ending || this.finished()) return true;
    let message: FramedMessage;
    try {
      message = this.method.encode(value);
    } catch (err) {
      this.sendStatus({ code: GrpcStatus.INTERNAL, details: `failed to encode the response: ${(err as Error).message}` });
      return true;
    }
    this.unsent++;
    this.writeMessage(message, this.method.maxSend, () => this.taken());
    // Past the send limit the call has just ended: no 'drain' to wait for.
    if (this.unsent < WRITE_HIGH_WATER_MARK || this.finished()) return true;
    this.owesDrain = true;
    return false;
  }

  /** Ends the call after the responses written: with OK, or the status of an 'error' emitted on it. */
  end(): void {
    if (this.ending) return;
    this.ending = true;
    this.sendStatus(this.status);
  }

  onMessage(bytes: Buffer): void {
    let request: Req;
    try {
      request = this.method.decode ? this.method.decode(bytes) : (bytes as Req);
    } catch {
      return this.sendStatus({ code: GrpcStatus.INTERNAL, details: 'Error deserializing request' });
    }
    if (this.method.kind === 'bidi') this.emit('data', request);
    else this.request = request;
  }

  onHalfClose(): void {
    if (this.method.kind === 'bidi') {
      this.emit('end');
      return;
    }
    if (this.request === undefined || this.reader.midMessage) {
      return this.sendStatus({ code: GrpcStatus.UNIMPLEMENTED, details: `Received no request message for server streaming method ${this.method.path}` });
    }
    this.runHandler();
  }

  private runHandler(): void {
    try {
      this.method.handler(this);
    } catch {
      this.sendStatus({ code: GrpcStatus.UNKNOWN, details: 'Unknown error' });
    }
  }

  /** The stream has taken a response. */
  private taken(): void {
    this.unsent--;
    if (this.unsent === 0 && this.owesDrain) {
      this.owesDrain = false;
      this.emit('drain');
    }
  }
}
