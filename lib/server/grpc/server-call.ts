import { EventEmitter } from 'node:events';
import type * as http2 from 'node:http2';
import { GrpcStatus } from '../../base/errors';
import type { CallHeaders, CallMetadata } from './call-headers';
import type { GrpcCallStatus } from './grpc-status';
import { MessageReader, PREFIX_BYTES, type MessageReaderOptions, type MessageSink } from './message-reader';

/** A response message as a gRPC length-prefixed message, in pieces to write in order. */
export interface FramedMessage {
  readonly pieces: Uint8Array[];
  /** The message's length, without its 5-byte prefix. */
  readonly messageLength: number;
}

/** How a method's calls read and write their messages. */
export interface CallLimits {
  /** Largest message received or sent, in bytes; -1 for no limit. */
  readonly maxReceive: number;
  readonly maxSend: number;
}

/** `bytes` behind a gRPC message prefix (not compressed: the server sends no compressed message). */
export function framed(bytes: Uint8Array): FramedMessage {
  const prefix = Buffer.alloc(PREFIX_BYTES);
  prefix.writeUInt32BE(bytes.length, 1);
  return { pieces: [prefix, bytes], messageLength: bytes.length };
}

const RESPONSE_HEADERS: http2.OutgoingHttpHeaders = {
  ':status': 200,
  'content-type': 'application/grpc+proto',
  'grpc-accept-encoding': 'identity,deflate,gzip',
  'grpc-encoding': 'identity',
};
const TRAILERS_ONLY_HEADERS: http2.OutgoingHttpHeaders = { ':status': 200, 'content-type': 'application/grpc+proto' };

/**
 * Ends a stream that carries no call with `status`, in one header block (a trailers-only response): an unknown
 * method, a `grpc-timeout` that is not one.
 */
export function respondWithStatus(stream: http2.ServerHttp2Stream, status: GrpcCallStatus): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond({ ...TRAILERS_ONLY_HEADERS, 'grpc-status': String(status.code), 'grpc-message': encodeURI(status.details) }, { endStream: true });
}

/**
 * One gRPC call on its HTTP/2 stream, the part every kind of call shares: its metadata, deadline and peer, the
 * response headers, messages and status, and 'cancelled', emitted once on the next tick when the call is over,
 * answered or not (as grpc-js emits it). Its subclasses read the request messages: `onMessage` and
 * `onHalfClose`, in order.
 *
 * A call behaves as grpc-js's: the same status codes and messages, size limits, deadline, trailers (`grpc-status`,
 * `grpc-message` percent-encoded) and, without a message sent, a trailers-only answer.
 */
export abstract class ServerCall extends EventEmitter implements MessageSink {
  readonly metadata: CallMetadata;
  /** True once the call is over (answered, cancelled or past its deadline). */
  cancelled = false;
  protected readonly reader: MessageReader;
  private readonly deadline: number;
  private readonly peer: string;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private headersSent = false;
  private statusSent = false;
  private cancelNotified = false;

  constructor(
    protected readonly stream: http2.ServerHttp2Stream,
    headers: CallHeaders,
    reading: MessageReaderOptions,
  ) {
    super();
    this.metadata = headers.metadata;
    this.deadline = headers.deadline;
    // Read now: once the stream closes, its session may have no socket left.
    const socket = stream.session?.socket;
    this.peer = !socket?.remoteAddress ? 'unknown' : socket.remotePort ? `${socket.remoteAddress}:${socket.remotePort}` : socket.remoteAddress;
    if (Number.isFinite(this.deadline)) {
      this.deadlineTimer = setTimeout(() => this.sendStatus({ code: GrpcStatus.DEADLINE_EXCEEDED, details: 'Deadline exceeded' }), Math.max(0, this.deadline - Date.now()));
    }
    this.reader = new MessageReader(reading, this);
    // A reset or a broken connection ends the stream with an error, then 'close': the call is cancelled. Without
    // a listener, the error would be thrown and take the process down.
    stream.on('error', () => this.notifyCancelled());
    stream.once('close', () => this.notifyCancelled());
    stream.on('data', (chunk: Buffer) => this.reader.write(chunk));
    stream.once('end', () => this.reader.end());
  }

  /** When the call must be over, in ms since the epoch (Infinity without a deadline). */
  getDeadline(): number {
    return this.deadline;
  }

  /** The client's address and port. */
  getPeer(): string {
    return this.peer;
  }

  abstract onMessage(bytes: Buffer, own: boolean): void;
  abstract onHalfClose(): void;

  onReadError(status: GrpcCallStatus): void {
    this.sendStatus(status);
  }

  /**
   * Writes one response message (the response headers first, once); `done` runs once the stream has taken it.
   * Returns the stream's answer: false when its buffer is full. Nothing is written once the call is over.
   */
  protected writeMessage(message: FramedMessage, maxSend: number, done?: () => void): boolean {
    if (this.finished()) return true;
    if (maxSend !== -1 && message.messageLength > maxSend) {
      this.sendStatus({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: `Sent message larger than max (${message.messageLength + PREFIX_BYTES} vs. ${maxSend})` });
      return true;
    }
    const stream = this.stream;
    if (!this.headersSent) {
      this.headersSent = true;
      stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    }
    const last = message.pieces.length - 1;
    let ok = true;
    stream.cork();
    message.pieces.forEach((piece, i) => {
      ok = i === last && done ? stream.write(piece, () => done()) : stream.write(piece);
    });
    stream.uncork();
    return ok;
  }

  /**
   * Ends the call with `status`: in the trailers after the messages written, or alone as a trailers-only answer.
   * The first status wins; nothing is sent once the stream is gone.
   */
  sendStatus(status: GrpcCallStatus): void {
    if (this.finished()) return;
    this.statusSent = true;
    this.reader.stop();
    this.clearDeadline();
    const stream = this.stream;
    if (!this.headersSent) {
      respondWithStatus(stream, status);
      this.notifyCancelled();
      return;
    }
    stream.once('wantTrailers', () => {
      stream.sendTrailers({ 'grpc-status': String(status.code), 'grpc-message': encodeURI(status.details) });
      this.notifyCancelled();
    });
    stream.end();
  }

  /** True when nothing more can be written: the call's status is sent, or its stream is gone. */
  protected finished(): boolean {
    if (this.statusSent) return true;
    if (this.stream.destroyed || this.stream.closed) {
      this.notifyCancelled();
      return true;
    }
    return false;
  }

  private clearDeadline(): void {
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
  }

  /** The call is over, answered or not: 'cancelled' once, on the next tick. */
  protected notifyCancelled(): void {
    if (this.cancelNotified) return;
    this.cancelNotified = true;
    this.cancelled = true;
    this.reader.stop();
    this.clearDeadline();
    process.nextTick(() => this.emit('cancelled', 'cancelled'));
  }
}
