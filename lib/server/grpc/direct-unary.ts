import { EventEmitter } from 'node:events';
import * as http2 from 'node:http2';
import { Metadata, status as Status, type StatusObject } from '@grpc/grpc-js';
import { RequestMemory, type BufferLease, type BufferPool } from '../../tensor/buffer-pool';

/** What a unary handler answers with: a status, or null and the response. */
export type UnaryCallback<Res> = (err: Partial<StatusObject> | null, value?: Res) => void;

/** A handler of a unary RPC, written against grpc-js's call (the part of it our handlers use). */
export type UnaryHandler<Res> = (call: DirectUnaryCall<Res>, callback: UnaryCallback<Res>) => void;

/** How a direct unary method reads and writes its messages. */
export interface DirectUnaryMethod<Res> {
  /** The method's full path, `/package.Service/Method`. */
  path: string;
  handler: UnaryHandler<Res>;
  /** The response as a gRPC length-prefixed message, in pieces to write in order. */
  encode(value: Res): { pieces: Uint8Array[]; messageLength: number };
  /** Largest message received or sent, in bytes; -1 for no limit. */
  maxReceive: number;
  maxSend: number;
  /**
   * Where large request messages are received. Each call gets a RequestMemory (`memory`), released once a
   * message answer is written: the handler must be done with the request when it answers with a message. An
   * error status keeps its buffers out of the pool, since work on the request may still be running.
   */
  buffers?: BufferPool;
}

/** `grpc-timeout`: up to 8 digits and a unit (gRPC over HTTP/2). */
const TIMEOUT = /^(\d{1,8})\s*([HMSmun])$/;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** The headers a grpc-js handler does not see in its metadata. */
const TRANSPORT_HEADERS = ['grpc-timeout', 'grpc-encoding', 'grpc-accept-encoding', 'accept-encoding', 'te', 'content-type'];

const RESPONSE_HEADERS: http2.OutgoingHttpHeaders = {
  ':status': 200,
  'content-type': 'application/grpc+proto',
  'grpc-accept-encoding': 'identity,deflate,gzip',
  'grpc-encoding': 'identity',
};

/**
 * Serves one call of a unary method on its HTTP/2 stream, without grpc-js: the request message is copied once,
 * from the frames as they arrive, into a buffer of its own (grpc-js collects the frames, then joins them), and
 * the response's pieces are written as they are (grpc-js copies the message into a new buffer behind the frame
 * header). On 4 MB tensors each copy is a 4 MB allocation for the garbage collector; see docs/grpc.md.
 *
 * The call behaves as grpc-js's does: the same metadata, deadline, status codes and messages, size limits and
 * trailers. Returns false, leaving the stream untouched for grpc-js, for what it alone handles: a compressed
 * request, a content type that is not gRPC's, or a `grpc-timeout` it must refuse.
 */
export function serveDirectUnary<Res>(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, method: DirectUnaryMethod<Res>): boolean {
  const encoding = headers['grpc-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return false;
  if (!headers['content-type']?.startsWith('application/grpc')) return false;
  let deadline = Infinity;
  const timeout = headers['grpc-timeout'];
  if (timeout !== undefined) {
    const m = TIMEOUT.exec(String(timeout));
    if (!m) return false;
    deadline = Date.now() + ((Number(m[1]) * (UNIT_MS[m[2] as string] as number)) | 0);
  }
  new DirectUnaryCall(stream, headers, deadline, method);
  return true;
}

/** One call: reads the request, runs the handler, writes the answer; emits 'cancelled' once the stream is done. */
export class DirectUnaryCall<Res> extends EventEmitter {
  readonly metadata: Metadata;
  request: Buffer = EMPTY;
  /** True once the call is over (answered, cancelled or past its deadline). */
  cancelled = false;
  private answered = false;
  private readonly peer: string;
  private cancelNotified = false;
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** The message being read: its 5-byte prefix, then its body. */
  private prefix = Buffer.alloc(5);
  private prefixRead = 0;
  private body: Buffer | undefined;
  private bodyRead = 0;
  private messages = 0;
  /** The pooled memory of this call's request, when the method has a pool. */
  readonly memory: RequestMemory | undefined;
  /** The request message's pooled buffer, when it has one. */
  private lease: BufferLease | undefined;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    private readonly deadline: number,
    private readonly method: DirectUnaryMethod<Res>,
  ) {
    super();
    const metadata = Metadata.fromHttp2Headers(headers);
    for (const h of TRANSPORT_HEADERS) metadata.remove(h);
    this.metadata = metadata;
    this.memory = method.buffers && new RequestMemory(method.buffers);
    // Read now: once the stream closes, its session may have no socket left.
    const socket = stream.session?.socket;
    this.peer = !socket?.remoteAddress ? 'unknown' : socket.remotePort ? `${socket.remoteAddress}:${socket.remotePort}` : socket.remoteAddress;
    if (Number.isFinite(deadline)) {
      this.deadlineTimer = setTimeout(() => this.sendStatus({ code: Status.DEADLINE_EXCEEDED, details: 'Deadline exceeded' }), Math.max(0, deadline - Date.now()));
    }
    // A reset or a broken connection ends the stream with an error, then 'close': the call is cancelled. Without
    // a listener, the error would be thrown and take the process down.
    stream.on('error', () => this.notifyCancelled());
    stream.once('close', () => this.notifyCancelled());
    stream.on('data', (chunk: Buffer) => this.read(chunk));
    stream.once('end', () => this.halfClosed());
  }

  getDeadline(): number {
    return this.deadline;
  }

  getPeer(): string {
    return this.peer;
  }

  /**
   * The ArrayBuffer that holds the request message and nothing anyone else reads, when the message is large
   * enough to have one: its decoder may move bytes within it, and a worker instance may take it.
   */
  requestMemory(): ArrayBuffer | undefined {
    if (this.lease) return this.lease.arrayBuffer;
    // Buffer.allocUnsafe gives a buffer this large an ArrayBuffer of its own.
    return this.request.length >= OWN_BUFFER_BYTES ? (this.request.buffer as ArrayBuffer) : undefined;
  }

  private read(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.answered) {
      if (this.prefixRead < 5) {
        const n = Math.min(5 - this.prefixRead, chunk.length - at);
        chunk.copy(this.prefix, this.prefixRead, at, at + n);
        this.prefixRead += n;
        at += n;
        if (this.prefixRead === 5 && !this.startMessage()) return;
        continue;
      }
      const body = this.body as Buffer;
      const n = Math.min(body.length - this.bodyRead, chunk.length - at);
      chunk.copy(body, this.bodyRead, at, at + n);
      this.bodyRead += n;
      at += n;
      if (this.bodyRead === body.length) this.endMessage();
    }
  }

  /** The prefix is in: checks it and makes room for the body. False when the call has been answered. */
  private startMessage(): boolean {
    if (++this.messages > 1) {
      this.sendStatus({ code: Status.UNIMPLEMENTED, details: `Received a second request message for server streaming method ${this.method.path}` });
      return false;
    }
    if (this.prefix[0] !== 0) {
      this.sendStatus({ code: Status.INTERNAL, details: 'Received a compressed message but "grpc-encoding" is identity' });
      return false;
    }
    const length = this.prefix.readUInt32BE(1);
    const max = this.method.maxReceive;
    if (max !== -1 && length > max) {
      this.sendStatus({ code: Status.RESOURCE_EXHAUSTED, details: `Received message larger than max (${length} vs ${max})` });
      return false;
    }
    // The 5-byte prefix stays in front, as grpc-js leaves it.
    this.lease = this.memory?.lease(5 + length);
    const framed = this.lease ? this.lease.bytes : Buffer.allocUnsafe(5 + length);
    this.prefix.copy(framed, 0);
    this.body = framed.subarray(5);
    this.bodyRead = 0;
    if (length === 0) this.endMessage();
    return true;
  }

  private endMessage(): void {
    this.request = this.body as Buffer;
    this.prefixRead = 0;
  }

  private halfClosed(): void {
    if (this.answered) return;
    if (this.messages === 0 || this.prefixRead !== 0) {
      this.sendStatus({ code: Status.UNIMPLEMENTED, details: `Received no request message for server streaming method ${this.method.path}` });
      return;
    }
    this.method.handler(this, (err, value) => {
      if (err) this.sendStatus(err);
      else this.sendMessage(value as Res);
    });
  }

  private sendMessage(value: Res): void {
    if (this.finished()) return;
    let framed: { pieces: Uint8Array[]; messageLength: number };
    try {
      framed = this.method.encode(value);
    } catch (err) {
      this.sendStatus({ code: Status.INTERNAL, details: `failed to encode the response: ${(err as Error).message}` });
      return;
    }
    const max = this.method.maxSend;
    if (max !== -1 && framed.messageLength > max) {
      this.sendStatus({ code: Status.RESOURCE_EXHAUSTED, details: `Sent message larger than max (${framed.messageLength + 5} vs. ${max})` });
      return;
    }
    this.answered = true;
    this.clearDeadline();
    const stream = this.stream;
    stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    stream.once('wantTrailers', () => {
      stream.sendTrailers({ 'grpc-status': String(Status.OK), 'grpc-message': 'OK' });
      this.notifyCancelled();
    });
    const memory = this.memory;
    if (memory?.holding) {
      // The response may view the request's memory (an output that is an input): it goes back once every
      // write is done ('finish') and the stream is over ('close'). A stream reset before then keeps it.
      let pending = 2;
      const done = (): void => {
        if (--pending === 0) memory.release();
      };
      stream.once('finish', done);
      stream.once('close', done);
    }
    stream.cork();
    for (const piece of framed.pieces) stream.write(piece);
    stream.end();
    stream.uncork();
  }

  private sendStatus(status: Partial<StatusObject>): void {
    if (this.finished()) return;
    this.answered = true;
    this.clearDeadline();
    const code = status.code ?? Status.UNKNOWN;
    // Trailers only: the status goes in the one header block, which ends the stream.
    this.stream.respond({ ...RESPONSE_HEADERS_ONLY, 'grpc-status': String(code), 'grpc-message': encodeURI(status.details ?? '') }, { endStream: true });
    this.notifyCancelled();
  }

  /** True when nothing more can be written: the call was answered, or its stream is gone. */
  private finished(): boolean {
    if (this.answered) return true;
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

  /** The call is over, answered or not: 'cancelled' once, on the next tick, as grpc-js emits it. */
  private notifyCancelled(): void {
    if (this.cancelNotified) return;
    this.cancelNotified = true;
    this.cancelled = true;
    this.clearDeadline();
    process.nextTick(() => this.emit('cancelled', 'cancelled'));
  }
}

const EMPTY = Buffer.alloc(0);
/** Buffer.allocUnsafe's pool serves up to half its 8 KiB; a message this large has its ArrayBuffer to itself. */
const OWN_BUFFER_BYTES = 64 * 1024;
const RESPONSE_HEADERS_ONLY: http2.OutgoingHttpHeaders = { ':status': 200, 'content-type': 'application/grpc+proto' };
