import type * as http2 from 'node:http2';
import { GrpcStatus, TritonError } from '../../base/errors';
import { parseCallHeaders } from './call-headers';
import { DirectUnaryCall, type DirectUnaryMethod, type UnaryHandler } from './direct-unary';
import { framed, respondWithStatus, type CallLimits, type FramedMessage } from './server-call';
import { StreamCall, type StreamHandler, type StreamMethod } from './stream-call';

/** A method as a .proto loader describes it (the fields of grpc-js's `MethodDefinition` this reads). */
export interface MethodDescription {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  requestDeserialize(bytes: Buffer): unknown;
  responseSerialize(value: unknown): Uint8Array;
}

/** How one method's messages are read and written where the service's own codecs are not used. */
export interface MethodCodec {
  decode?(bytes: Buffer): unknown;
  encode?(value: unknown): FramedMessage;
}

/** The methods a server serves, by path. */
export type GrpcRoutes = Map<string, DirectUnaryMethod<unknown, unknown> | StreamMethod<unknown, unknown>>;

/** What every method of a service shares: its size limits and where unary requests are received. */
export interface ServiceOptions extends CallLimits {
  /** Codecs of particular methods, by name, in place of the service's. */
  readonly codecs?: Readonly<Record<string, MethodCodec>>;
  /** The pool large unary requests of the methods with their own codecs are received into. */
  readonly buffers?: DirectUnaryMethod<unknown>['buffers'];
}

/**
 * Adds to `routes` every method of `service` that `handlers` implements, with the service's codecs (or those of
 * `options.codecs`). Handlers are grpc-js-shaped: `(call, callback)` for a unary method, `(call)` for a
 * streaming one; the calls they get have the surface of grpc-js's that they use.
 */
export function addService(
  routes: GrpcRoutes,
  service: Readonly<Record<string, MethodDescription>>,
  handlers: Readonly<Record<string, unknown>>,
  options: ServiceOptions,
): void {
  for (const [name, description] of Object.entries(service)) {
    const handler = handlers[name];
    if (typeof handler !== 'function') continue;
    const codec = options.codecs?.[name];
    const decode = codec?.decode ?? ((bytes: Buffer) => description.requestDeserialize(bytes));
    const encode = codec?.encode ?? ((value: unknown) => framed(description.responseSerialize(value)));
    const limits = { maxReceive: options.maxReceive, maxSend: options.maxSend };
    const path = description.path;
    if (!description.responseStream && !description.requestStream) {
      const buffers = codec ? options.buffers : undefined;
      routes.set(path, { path, handler: handler as UnaryHandler<unknown, unknown>, decode, encode, ...limits, ...(buffers ? { buffers } : {}) });
    } else if (description.responseStream) {
      const kind = description.requestStream ? 'bidi' : 'server';
      routes.set(path, { path, kind, handler: handler as StreamHandler<unknown, unknown>, decode, encode, ...limits });
    } else {
      throw new TritonError('INTERNAL', `gRPC method ${path}: client-streaming methods are not served; expected unary, server-streaming or bidirectional`);
    }
  }
}

/**
 * Serves one new HTTP/2 stream as a gRPC call, checking what grpc-js checks before a handler runs: a content type
 * that is not gRPC's is answered 415, an unknown method UNIMPLEMENTED, a `grpc-timeout` that is not one INTERNAL.
 */
export function routeGrpcStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, routes: GrpcRoutes): void {
  // An error on a stream with no call (yet) has nothing to tell; without a listener it would be thrown.
  stream.on('error', () => undefined);
  const contentType = headers['content-type'];
  if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
    if (!stream.destroyed && !stream.closed) stream.respond({ ':status': 415 }, { endStream: true });
    return;
  }
  const path = String(headers[':path']);
  const method = routes.get(path);
  if (!method) return respondWithStatus(stream, { code: GrpcStatus.UNIMPLEMENTED, details: `The server does not implement the method ${path}` });
  const call = parseCallHeaders(headers);
  if ('code' in call) return respondWithStatus(stream, call);
  if ('kind' in method) new StreamCall(stream, call, method);
  else new DirectUnaryCall(stream, call, method);
}
