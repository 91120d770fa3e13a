/**
 * A minimal HTTP/2 client connection for gRPC unary load: just enough of RFC 9113 to send pre-framed calls and
 * learn how each ended. Requests are written as a HEADERS frame (a header block encoded once, without Huffman
 * coding or table indexing, so no encoder state) and DATA frames; answers are read frame by frame without
 * decoding their header blocks (HPACK state matters only to a decoder). A call succeeded when its stream ended
 * after at least one DATA frame (gRPC servers answer a failed unary call with a trailers-only response), and
 * failed when it was reset, trailers-only, or its connection went away. Flow control both ways, SETTINGS, PING
 * and GOAWAY are honoured. node:http2 costs several times more CPU per call, which would make the client the bound.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { TargetTls } from './connection-target';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const FRAME_HEADER = 9;
enum Frame {
  Data = 0,
  Headers = 1,
  RstStream = 3,
  Settings = 4,
  Ping = 6,
  GoAway = 7,
  WindowUpdate = 8,
}
const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const MAX_WINDOW = 2 ** 31 - 1;
const DEFAULT_WINDOW = 65_535;
/** Received bytes after which the connection's receive window is topped up again. */
const REPLENISH_AT = 2 ** 30;
/** Stream ids run out at 2^31; a connection this far along is replaced by a new one. */
const LAST_STREAM_ID = 2 ** 31 - 1000;

/** How a call ended: undefined when it succeeded, else what was wrong. */
export type CallEnd = (problem?: string) => void;

/** One call in flight: its DATA still to send (flow control), and whether an answer's DATA has arrived. */
interface Call {
  readonly end: CallEnd;
  sendWindow: number;
  pending?: Uint8Array;
  gotData: boolean;
}

/** An integer in HPACK's prefix coding (RFC 7541 §5.1), `prefixBits` wide, with `flags` in the first byte's other bits. */
function hpackInteger(value: number, prefixBits: number, flags: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [flags | value];
  const out = [flags | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

function hpackString(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from(hpackInteger(bytes.length, 7, 0)), bytes]);
}

/**
 * The header block of a gRPC call to `path`: `:method POST` and `:scheme` from the static table, the rest as
 * literals without indexing (RFC 7541 §6.2.2), so that the same bytes serve every call.
 */
export function grpcHeaderBlock(path: string, authority: string, secure: boolean, metadata: Readonly<Record<string, string>>): Buffer {
  const literalIndexedName = (index: number, value: string): Buffer => Buffer.concat([Buffer.from(hpackInteger(index, 4, 0)), hpackString(value)]);
  const literal = (name: string, value: string): Buffer => Buffer.concat([Buffer.from([0]), hpackString(name), hpackString(value)]);
  return Buffer.concat([
    Buffer.from([0x83, secure ? 0x87 : 0x86]), // :method POST (2), :scheme https (7) or http (6), static table
    literalIndexedName(4, path), // :path
    literalIndexedName(1, authority), // :authority
    literalIndexedName(31, 'application/grpc'), // content-type
    literal('te', 'trailers'),
    ...Object.entries(metadata).map(([k, v]) => literal(k.toLowerCase(), v)),
  ]);
}

function frameHeader(length: number, type: Frame, flags: number, stream: number): Buffer {
  const h = Buffer.allocUnsafe(FRAME_HEADER);
  h.writeUIntBE(length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return h;
}

/** HTTP/2 connections to one server: calls go to the current one; a new one replaces it when it ends or its ids run out. */
export class H2Client {
  private current: H2Session | undefined;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly tlsOptions: TargetTls | undefined,
  ) {}

  /** Sends a call with `headerBlock` and the gRPC-framed `message`; `end` is called once when it ends. */
  call(headerBlock: Buffer, message: Uint8Array, end: CallEnd): void {
    if (!this.current?.accepting) this.current = new H2Session(this.host, this.port, this.tlsOptions);
    this.current.call(headerBlock, message, end);
  }

  close(): void {
    this.current?.fail('the connection was closed');
    this.current = undefined;
  }
}

/** One HTTP/2 connection and the calls on it. */
class H2Session {
  /** New calls may start here: false once the connection failed, was told to go away, or ran out of ids. */
  accepting = true;
  private readonly socket: net.Socket;
  private readonly calls = new Map<number, Call>();
  private nextStream = 1;
  private received: Buffer | undefined;
  private connectionSendWindow = DEFAULT_WINDOW;
  private initialSendWindow = DEFAULT_WINDOW;
  private maxFrame = 16_384;
  private unacknowledgedBytes = 0;
  /** Calls waiting for connection-level send window, in order. */
  private readonly blocked: number[] = [];

  constructor(host: string, port: number, t: TargetTls | undefined) {
    const socket = t
      ? tls.connect({ host, port, ALPNProtocols: ['h2'], ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: t.verifyPeer, ...(!t.verifyHost && { checkServerIdentity: () => undefined }), ...(net.isIP(host) === 0 && { servername: host }) })
      : net.connect({ host, port });
    socket.setNoDelay(true);
    // The preface, our settings (no push; the largest stream window) and the largest connection window.
    const settings = Buffer.alloc(12);
    settings.writeUInt16BE(0x2, 0); // SETTINGS_ENABLE_PUSH
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(0x4, 6); // SETTINGS_INITIAL_WINDOW_SIZE
    settings.writeUInt32BE(MAX_WINDOW, 8);
    const update = Buffer.alloc(4);
    update.writeUInt32BE(MAX_WINDOW - DEFAULT_WINDOW, 0);
    socket.write(Buffer.concat([PREFACE, frameHeader(12, Frame.Settings, 0, 0), settings, frameHeader(4, Frame.WindowUpdate, 0, 0), update]));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.fail(err.message));
    socket.on('close', () => this.fail('the server closed the connection'));
    this.socket = socket;
  }

  call(headerBlock: Buffer, message: Uint8Array, end: CallEnd): void {
    const id = this.nextStream;
    this.nextStream += 2;
    if (this.nextStream > LAST_STREAM_ID) this.accepting = false;
    const call: Call = { end, sendWindow: this.initialSendWindow, gotData: false };
    this.calls.set(id, call);
    const headers = frameHeader(headerBlock.length, Frame.Headers, END_HEADERS, id);
    const socket = this.socket;
    if (message.length <= Math.min(this.maxFrame, this.connectionSendWindow, call.sendWindow)) {
      // The common case, in one write: HEADERS, then all of the message in one DATA frame that ends the stream.
      this.connectionSendWindow -= message.length;
      call.sendWindow -= message.length;
      socket.cork();
      socket.write(headers);
      socket.write(headerBlock);
      socket.write(frameHeader(message.length, Frame.Data, END_STREAM, id));
      socket.write(message);
      socket.uncork();
      return;
    }
    socket.write(Buffer.concat([headers, headerBlock]));
    call.pending = message;
    this.pump(id, call);
  }

  /** Ends every call on this connection with `problem`, and the connection. */
  fail(problem: string): void {
    this.accepting = false;
    this.socket.destroy();
    const calls = [...this.calls.values()];
    this.calls.clear();
    this.blocked.length = 0;
    for (const call of calls) call.end(problem);
  }

  /** Sends as much of a call's pending DATA as the windows allow. */
  private pump(id: number, call: Call): void {
    while (call.pending) {
      const size = Math.min(call.pending.length, this.maxFrame, this.connectionSendWindow, call.sendWindow);
      if (size <= 0) {
        if (this.connectionSendWindow <= 0 && !this.blocked.includes(id)) this.blocked.push(id);
        return;
      }
      const last = size === call.pending.length;
      this.socket.write(frameHeader(size, Frame.Data, last ? END_STREAM : 0, id));
      this.socket.write(call.pending.subarray(0, size));
      this.connectionSendWindow -= size;
      call.sendWindow -= size;
      call.pending = last ? undefined : call.pending.subarray(size);
    }
  }

  private onData(chunk: Buffer): void {
    let data = this.received ? Buffer.concat([this.received, chunk]) : chunk;
    while (data.length >= FRAME_HEADER) {
      const length = data.readUIntBE(0, 3);
      if (data.length < FRAME_HEADER + length) break;
      this.onFrame(data[3] as number, data[4] as number, data.readUInt32BE(5) & 0x7fffffff, data.subarray(FRAME_HEADER, FRAME_HEADER + length));
      data = data.subarray(FRAME_HEADER + length);
    }
    this.received = data.length > 0 ? data : undefined;
  }

  private onFrame(type: number, flags: number, stream: number, payload: Buffer): void {
    const socket = this.socket;
    switch (type) {
      case Frame.Data: {
        this.unacknowledgedBytes += payload.length;
        if (this.unacknowledgedBytes >= REPLENISH_AT) {
          const update = Buffer.alloc(4);
          update.writeUInt32BE(this.unacknowledgedBytes, 0);
          socket.write(Buffer.concat([frameHeader(4, Frame.WindowUpdate, 0, 0), update]));
          this.unacknowledgedBytes = 0;
        }
        const call = this.calls.get(stream);
        const padding = flags & PADDED ? (payload[0] as number) + 1 : 0;
        if (call && payload.length > padding) call.gotData = true;
        if (flags & END_STREAM) this.finish(stream, call?.gotData ? undefined : 'the call ended without an answer');
        return;
      }
      case Frame.Headers:
        // Response headers or trailers; a stream that ends here without DATA is a trailers-only (failed) call.
        if (flags & END_STREAM) this.finish(stream, this.calls.get(stream)?.gotData ? undefined : 'the server failed the call (a trailers-only response)');
        return;
      case Frame.RstStream:
        this.finish(stream, `the server reset the call (HTTP/2 error ${payload.length >= 4 ? payload.readUInt32BE(0) : '?'})`);
        return;
      case Frame.Settings:
        if (flags & ACK) return;
        for (let at = 0; at + 6 <= payload.length; at += 6) this.setting(payload.readUInt16BE(at), payload.readUInt32BE(at + 2));
        socket.write(frameHeader(0, Frame.Settings, ACK, 0));
        return;
      case Frame.Ping:
        if (!(flags & ACK)) socket.write(Buffer.concat([frameHeader(8, Frame.Ping, ACK, 0), payload]));
        return;
      case Frame.GoAway: {
        // Calls above the last id the server will process fail; the rest finish; new calls go to a new connection.
        this.accepting = false;
        const last = payload.readUInt32BE(0) & 0x7fffffff;
        for (const id of [...this.calls.keys()]) if (id > last) this.finish(id, `the server is going away (GOAWAY, error ${payload.readUInt32BE(4)})`);
        return;
      }
      case Frame.WindowUpdate: {
        const increment = payload.readUInt32BE(0) & 0x7fffffff;
        if (stream === 0) {
          this.connectionSendWindow += increment;
          for (const id of this.blocked.splice(0)) {
            const call = this.calls.get(id);
            if (call) this.pump(id, call);
          }
        } else {
          const call = this.calls.get(stream);
          if (call) {
            call.sendWindow += increment;
            this.pump(stream, call);
          }
        }
        return;
      }
      default:
        return; // PRIORITY, PUSH_PROMISE (refused by our settings), CONTINUATION of a block we do not read, unknown
    }
  }

  private setting(id: number, value: number): void {
    if (id === 0x4) {
      // SETTINGS_INITIAL_WINDOW_SIZE changes every open stream's window by the difference (RFC 9113 §6.9.2).
      const delta = value - this.initialSendWindow;
      this.initialSendWindow = value;
      for (const [stream, call] of this.calls) {
        call.sendWindow += delta;
        if (delta > 0) this.pump(stream, call);
      }
    } else if (id === 0x5) {
      this.maxFrame = value;
    }
  }

  private finish(stream: number, problem: string | undefined): void {
    const call = this.calls.get(stream);
    if (!call) return;
    this.calls.delete(stream);
    call.end(problem);
    // A connection that takes no new calls closes once its last call has ended.
    if (!this.accepting && this.calls.size === 0) this.socket.end();
  }
}
