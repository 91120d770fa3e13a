/**
 * gRPC for the load threads: a request is one HTTP/2 stream carrying the pre-serialized ModelInferRequest in
 * gRPC's length-prefixed framing. Unary calls go over h2-connection.ts's minimal HTTP/2 client, which reads an
 * answer only as far as how it ended; the first failed call is sent once more over node:http2 to read the
 * server's message (`grpc-message`). ModelStreamInfer streams use node:http2, whose cost is per stream, not per
 * request. grpc-js's call machinery costs several times the CPU per call, which would make the client the bound.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import type { ConnectionTarget } from './connection-target';
import { grpcHeaderBlock, H2Client } from './h2-connection';
import type { LoadConnection } from './load-connection';

const INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';
const STREAM_INFER_PATH = '/inference.GRPCInferenceService/ModelStreamInfer';
/** gRPC's message prefix: a compression flag byte and a 4-byte big-endian length. */
const PREFIX_BYTES = 5;
const MAX_ERROR_TEXT = 300;

/** gRPC status names by code, for messages. */
const STATUS_NAMES = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED'];

/** A message in gRPC's framing: uncompressed, with its length in front. */
export function grpcFrame(message: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(PREFIX_BYTES + message.byteLength);
  framed[0] = 0;
  framed.writeUInt32BE(message.byteLength, 1);
  framed.set(message, PREFIX_BYTES);
  return framed;
}

/** One HTTP/2 connection of a load thread to a gRPC server, insecure or TLS, and the metadata its calls carry. */
export class GrpcLoadChannel {
  private session: http2.ClientHttp2Session | undefined;
  private readonly headers: http2.OutgoingHttpHeaders;
  private readonly h2: H2Client;
  private readonly inferHeaderBlock: Buffer;
  /** Whether a failed call has been sent again to read the server's message (once per channel). */
  private described = false;

  constructor(private readonly target: ConnectionTarget) {
    this.headers = { 'content-type': 'application/grpc', te: 'trailers', ...target.metadata };
    this.h2 = new H2Client(target.host, target.port, target.tls);
    this.inferHeaderBlock = grpcHeaderBlock(INFER_PATH, `${target.host}:${target.port}`, target.tls !== undefined, target.metadata ?? {});
  }

  /** A connection that sends each request as its own ModelInfer call on this channel. */
  unary(): LoadConnection {
    return {
      send: (request, done) =>
        this.h2.call(this.inferHeaderBlock, request, (problem) => {
          if (problem === undefined || this.described) return done(problem);
          this.described = true;
          this.call(request, (message) => done(message ?? problem));
        }),
      close: () => undefined,
    };
  }

  /**
   * A connection that is one ModelStreamInfer stream: a request is done at its response, or, for a decoupled model,
   * at its response marked final.
   */
  stream(): LoadConnection {
    return new GrpcStreamConnection(this, this.target.decoupled === true);
  }

  /** Opens a call to `path`; the HTTP/2 session is opened at the first call, and again after it ends. */
  open(path: string): http2.ClientHttp2Stream {
    return this.connected().request({ ...this.headers, ':method': 'POST', ':path': path }, { endStream: false });
  }

  close(): void {
    this.h2.close();
    this.session?.close();
    this.session = undefined;
  }

  /** A unary call over node:http2: the framed request, then the status from the trailers (or a trailers-only answer's headers). */
  private call(request: Uint8Array, done: (problem?: string) => void): void {
    const stream = this.open(INFER_PATH);
    let problem: string | undefined;
    let status: string | undefined;
    stream.on('response', (headers) => {
      if (headers[':status'] !== 200) problem = `HTTP ${headers[':status']}`;
      if (headers['grpc-status'] !== undefined) [status, problem] = callStatus(headers, problem);
    });
    stream.on('trailers', (trailers) => ([status, problem] = callStatus(trailers, problem)));
    stream.on('data', () => undefined);
    stream.on('error', (err) => (problem ??= err.message));
    stream.on('close', () => done(problem ?? (status === undefined ? 'the call ended without a status' : undefined)));
    stream.end(request);
  }

  private connected(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const { host, port } = this.target;
    const t = this.target.tls;
    const session = t
      ? http2.connect(`https://${host}:${port}`, { ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: t.verifyPeer })
      : http2.connect(`http://${host}:${port}`, { createConnection: () => net.connect({ host, port, noDelay: true }) });
    session.on('error', () => undefined); // each call reports its own failure
    session.on('close', () => this.session === session && (this.session = undefined));
    this.session = session;
    return session;
  }
}

/** The gRPC status of a call from its trailers: [the status, what was wrong (the earlier problem, if any, first)]. */
function callStatus(trailers: http2.IncomingHttpHeaders, earlier: string | undefined): [string | undefined, string | undefined] {
  const status = trailers['grpc-status'] as string | undefined;
  if (status === undefined || status === '0') return [status, earlier];
  const message = decodeURIComponent(String(trailers['grpc-message'] ?? '')).slice(0, MAX_ERROR_TEXT);
  return [status, earlier ?? `${STATUS_NAMES[Number(status)] ?? status}: ${message}`];
}

/**
 * One ModelStreamInfer stream carrying one request at a time; opened at the first request, and again after it ends.
 * A server that ends the stream cleanly after a response (MLServer answers one request per stream) gets the request
 * that was on its way sent again on a new stream, and from then on one stream per request.
 */
class GrpcStreamConnection implements LoadConnection {
  private call: http2.ClientHttp2Stream | undefined;
  private done: ((problem?: string) => void) | undefined;
  /** The request awaiting its response. */
  private request: Uint8Array | undefined;
  /** Bytes of a response message not yet complete. */
  private buffered: Buffer | undefined;
  /** The server answers one request per stream. */
  private streamPerRequest = false;

  constructor(
    private readonly channel: GrpcLoadChannel,
    private readonly decoupled: boolean,
  ) {}

  send(request: Uint8Array, done: (problem?: string) => void): void {
    this.done = done;
    this.request = request;
    const call = this.call && !this.streamPerRequest ? this.call : this.open();
    call.write(request);
    if (this.streamPerRequest) call.end();
  }

  close(): void {
    const call = this.call;
    this.call = undefined;
    call?.end();
  }

  private open(): http2.ClientHttp2Stream {
    const call = this.channel.open(STREAM_INFER_PATH);
    let ended: string | undefined;
    call.on('data', (chunk: Buffer) => this.call === call && this.onData(chunk));
    call.on('trailers', (trailers) => ([, ended] = callStatus(trailers, undefined)));
    call.on('error', (err) => (ended ??= err.message));
    call.on('close', () => {
      if (this.call !== call) return;
      this.call = undefined;
      this.buffered = undefined;
      const request = this.request;
      if (request === undefined) return; // every request on it was answered
      if (ended === undefined && !this.streamPerRequest) {
        // Ended cleanly with a request on its way that it never read: a server of one request per stream.
        this.streamPerRequest = true;
        const done = this.done as (problem?: string) => void;
        this.send(request, done);
        return;
      }
      this.finish(ended ?? 'the server ended the stream without answering');
    });
    this.call = call;
    return call;
  }

  private onData(chunk: Buffer): void {
    let data = this.buffered ? Buffer.concat([this.buffered, chunk]) : chunk;
    while (data.length >= PREFIX_BYTES) {
      const end = PREFIX_BYTES + data.readUInt32BE(1);
      if (data.length < end) break;
      const message = data.subarray(PREFIX_BYTES, end);
      const problem = streamError(message);
      if (problem !== undefined || !this.decoupled || isFinalResponse(message)) this.finish(problem);
      data = data.subarray(end);
    }
    this.buffered = data.length > 0 ? data : undefined;
  }

  private finish(problem: string | undefined): void {
    const done = this.done;
    this.done = undefined;
    this.request = undefined;
    done?.(problem);
  }
}

/**
 * The `error_message` of a serialized ModelStreamInferResponse, if it is an error: a message whose only content is
 * field 1 (and at most an empty field 2, `infer_response`). Servers whose stream answers with ModelInferResponse
 * messages themselves (MLServer) also start with field 1, `model_name`, but go on with the response's other fields.
 */
function streamError(message: Buffer): string | undefined {
  if (message.length < 2 || message[0] !== 0x0a) return undefined;
  const [length, start] = varint(message, 1);
  const end = start + length;
  if (length === 0) return undefined;
  const rest = message.subarray(end);
  const onlyError = rest.length === 0 || (rest.length === 2 && rest[0] === 0x12 && rest[1] === 0);
  return onlyError ? message.toString('utf8', start, Math.min(end, start + MAX_ERROR_TEXT)) : undefined;
}

/** A protobuf varint at `pos`: [its value, where the bytes after it start]. */
function varint(bytes: Buffer, pos: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (; pos < bytes.length; pos++) {
    const byte = bytes[pos] as number;
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return [value, pos + 1];
  }
  return [value, pos];
}

/**
 * Whether a serialized ModelStreamInferResponse is its request's last: its `infer_response` (field 2) has the
 * parameter `triton_final_response` (map field 4) true, or has no such parameter (as Triton's own clients read it).
 */
function isFinalResponse(message: Buffer): boolean {
  const response = protoField(message, 2);
  if (!response) return true;
  for (const entry of protoFields(response, 4)) {
    if (protoField(entry, 1)?.toString('utf8') !== 'triton_final_response') continue;
    const value = protoField(entry, 2);
    return value !== undefined && value.length >= 2 && value[0] === 0x08 && value[1] !== 0; // InferParameter.bool_param
  }
  return true;
}

/** The first length-delimited field `field` of a message, if any. */
function protoField(message: Buffer, field: number): Buffer | undefined {
  for (const value of protoFields(message, field)) return value;
  return undefined;
}

/** The length-delimited fields numbered `field` of a message, in order; other fields are skipped by their wire type. */
function* protoFields(message: Buffer, field: number): Generator<Buffer> {
  let pos = 0;
  while (pos < message.length) {
    const [tag, afterTag] = varint(message, pos);
    const wire = tag % 8;
    pos = afterTag;
    if (wire === 0) pos = varint(message, pos)[1];
    else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else if (wire === 2) {
      const [length, start] = varint(message, pos);
      pos = start + length;
      if (Math.floor(tag / 8) === field) yield message.subarray(start, pos);
    } else return; // groups (3, 4) are not in these messages
  }
}
