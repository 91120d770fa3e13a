import * as zlib from 'node:zlib';
import { GrpcStatus } from '../../base/errors';
import type { GrpcCallStatus } from './grpc-status';

/** The size of a message's prefix: its compressed flag and its big-endian length. */
export const PREFIX_BYTES = 5;

/** How a call's messages are read. */
export interface MessageReaderOptions {
  /** The method's full path, for the messages of unary and server-streaming calls. */
  readonly path: string;
  /** Largest message, before and after decompression, in bytes; -1 for no limit. */
  readonly maxReceive: number;
  /** The call's `grpc-encoding`. */
  readonly encoding: string;
  /** A unary or server-streaming request: a second message ends the call (UNIMPLEMENTED, as in grpc-js). */
  readonly single: boolean;
}

/** What a reader reports, in the order the stream carried it. */
export interface MessageSink {
  /**
   * Where an uncompressed message is received: a buffer of exactly `framedLength` bytes (its prefix and itself), or
   * undefined for a new one.
   */
  allocate?(framedLength: number): Buffer | undefined;
  /** A whole message, decompressed. `own` is false for one that came out of zlib rather than the reader's buffer. */
  onMessage(bytes: Buffer, own: boolean): void;
  /** The client half-closed the call after its last message. */
  onHalfClose(): void;
  /** The messages broke a rule; the call must end with `status`. Nothing more is reported. */
  onReadError(status: GrpcCallStatus): void;
}

/**
 * Reads gRPC length-prefixed messages from a call's DATA frames, as they come: each message is copied once, from
 * the frames, into a buffer of its own (the prefix left in front of it, as grpc-js leaves it, so that its bytes
 * keep the alignment they had there). A compressed message (`grpc-encoding` gzip or deflate) is inflated with its
 * output bounded by the size limit: inflating stops as soon as the output passes it, so a small bomb costs the
 * server the limit, not what it would inflate to. Messages and the half-close are reported in order, a compressed
 * message's inflating included.
 */
export class MessageReader {
  /** The message being read: its prefix, then its body. */
  private readonly prefix = Buffer.alloc(PREFIX_BYTES);
  private prefixRead = 0;
  private body: Buffer | undefined;
  private bodyRead = 0;
  private compressed = false;
  private messages = 0;
  private stopped = false;
  /** Reports waiting for a message being inflated before them, in order. */
  private queued = 0;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: MessageReaderOptions,
    private readonly sink: MessageSink,
  ) {}

  /** True while a message has begun but not all of it has arrived. */
  get midMessage(): boolean {
    return this.prefixRead > 0;
  }

  /** Reports nothing more from now on. */
  stop(): void {
    this.stopped = true;
  }

  /** Takes the next DATA frame's bytes. */
  write(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.stopped) {
      if (this.prefixRead < PREFIX_BYTES) {
        const n = Math.min(PREFIX_BYTES - this.prefixRead, chunk.length - at);
        chunk.copy(this.prefix, this.prefixRead, at, at + n);
        this.prefixRead += n;
        at += n;
        if (this.prefixRead === PREFIX_BYTES) this.startMessage();
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

  /** The client half-closed: reported once every message before it is. */
  end(): void {
    this.after(() => this.sink.onHalfClose());
  }

  /** The prefix is in: checks it and makes room for the body. */
  private startMessage(): void {
    if (this.options.single && ++this.messages > 1) {
      return this.fail({ code: GrpcStatus.UNIMPLEMENTED, details: `Received a second request message for server streaming method ${this.options.path}` });
    }
    this.compressed = this.prefix[0] !== 0;
    if (this.compressed && this.options.encoding === 'identity') {
      return this.fail({ code: GrpcStatus.INTERNAL, details: 'Received a compressed message but "grpc-encoding" is identity' });
    }
    const length = this.prefix.readUInt32BE(1);
    const max = this.options.maxReceive;
    if (max !== -1 && length > max) return this.fail({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: `Received message larger than max (${length} vs ${max})` });
    // A compressed message is only read on the way to zlib: no pooled memory for it.
    const given = this.compressed ? undefined : this.sink.allocate?.(PREFIX_BYTES + length);
    const framed = given ?? Buffer.allocUnsafe(PREFIX_BYTES + length);
    this.prefix.copy(framed, 0);
    this.body = framed.subarray(PREFIX_BYTES);
    this.bodyRead = 0;
    if (length === 0) this.endMessage();
  }

  private endMessage(): void {
    const body = this.body as Buffer;
    this.body = undefined;
    this.prefixRead = 0;
    if (!this.compressed) {
      this.after(() => this.sink.onMessage(body, true));
      return;
    }
    // Inflating starts now; the message is reported in its turn.
    const inflated = inflate(body, this.options.encoding, this.options.maxReceive);
    this.enqueue(() =>
      inflated.then(
        (bytes) => {
          if (!this.stopped) this.sink.onMessage(bytes, false);
        },
        (status: GrpcCallStatus) => this.fail(status),
      ),
    );
  }

  /** Runs `report` now, or in its turn after the messages still being inflated. */
  private after(report: () => void): void {
    if (this.queued === 0) {
      if (!this.stopped) report();
      return;
    }
    this.enqueue(() => {
      if (!this.stopped) report();
    });
  }

  private enqueue(step: () => Promise<void> | void): void {
    this.queued++;
    this.queue = this.queue.then(async () => {
      try {
        await step();
      } finally {
        this.queued--;
      }
    });
  }

  private fail(status: GrpcCallStatus): void {
    if (this.stopped) return;
    this.stopped = true;
    this.sink.onReadError(status);
  }
}

/**
 * A compressed message's bytes, inflated; rejects with the call's status when it inflates past `max` bytes
 * (RESOURCE_EXHAUSTED, zlib stops there), is not valid (INTERNAL) or names an encoding this server does not
 * speak (UNIMPLEMENTED). Each rejection is handled where the message's turn comes.
 */
function inflate(bytes: Buffer, encoding: string, max: number): Promise<Buffer> {
  const result = new Promise<Buffer>((resolve, reject) => {
    if (encoding !== 'gzip' && encoding !== 'deflate') {
      reject({ code: GrpcStatus.UNIMPLEMENTED, details: `Received message compressed with unsupported encoding "${encoding}"` });
      return;
    }
    const options: zlib.ZlibOptions = max === -1 ? {} : { maxOutputLength: Math.max(1, max) };
    const done = (err: Error | null, out: Buffer): void => {
      if (!err) resolve(out);
      else if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        reject({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: `Received message that decompresses to a size larger than ${max}` });
      } else reject({ code: GrpcStatus.INTERNAL, details: 'Failed to decompress message' });
    };
    if (encoding === 'gzip') zlib.gunzip(bytes, options, done);
    else zlib.inflate(bytes, options, done);
  });
  // Settled in its turn by the queue; until then its rejection is not unhandled.
  result.catch(() => undefined);
  return result;
}
