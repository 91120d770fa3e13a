import { headerMatcher } from '../forward-headers';
import { tritonError } from '../../base/errors';
import type { Logger } from '../../logging/logger';
import type { ServerCore, Transport } from '../server-core';
import { serverTlsMaterial } from '../tls';
import { CallTracker } from './call-tracker';
import type { CallMetadata } from './call-headers';
import type { GrpcContext } from './grpc-context';
import { GrpcHttp2Port } from './grpc-http2';
import { addService, routeGrpcStream, type GrpcRoutes, type MethodCodec, type MethodDescription } from './grpc-router';
import { healthService } from './health-service';
import { inferenceService } from './inference-service';
import { encodeFramedModelInferResponse, encodeModelStreamInferResponse } from './infer-response-encoder';
import type { ModelInferResponseMessage, ModelStreamInferResponseMessage } from '../../protocol/messages';
import { loadProtos } from '../../protocol/protos';
import { toGrpcStatus } from './grpc-status';
import { framed } from './server-call';
import { GRPC_API_GROUPS, GRPC_RESTRICTED_PREFIX, RestrictedApis, grpcRestrictedError } from '../restricted-api';

/** How long a forced close lets calls it has just failed send their status before it cuts connections. */
const FORCE_GRACE_MS = 2000;

/**
 * The infer RPCs' codecs: their requests arrive as bytes, parsed by the handlers (`parseModelInferRequest`), so that
 * a malformed message is answered in order with the call's other messages; their responses are encoded by our own
 * encoders, ModelInfer's in pieces that keep each large output's bytes where they are (see docs/grpc.md).
 */
const INFER_CODECS: Readonly<Record<string, MethodCodec>> = {
  ModelInfer: { decode: receivedBytes, encode: (value) => encodeFramedModelInferResponse(value as ModelInferResponseMessage) },
  ModelStreamInfer: { decode: receivedBytes, encode: (value) => framed(encodeModelStreamInferResponse(value as ModelStreamInferResponseMessage)) },
};

/**
 * The gRPC endpoint: `inference.GRPCInferenceService` and `grpc.health.v1.Health`, served on our own node:http2
 * port (lib/server/grpc/grpc-http2.ts) with our own gRPC framing for every RPC: unary calls on direct-unary.ts,
 * streaming ones on stream-call.ts. Messages are limited to `grpcMaxMessageSize`, a compressed request's (gzip,
 * deflate) by its inflated size while it inflates.
 *
 * Stopping has two levels, as grpc-js's server has: `stopAccepting` refuses new calls (health answers
 * NOT_SERVING) while in-flight calls finish; `forceClose` fails what is left with UNAVAILABLE, closes
 * connections gracefully (GOAWAY), and cuts them after a short grace time.
 */
export class GrpcServer implements Transport {
  readonly name = 'grpc';
  private readonly tracker = new CallTracker();
  private readonly port: GrpcHttp2Port;

  constructor(
    private readonly core: ServerCore,
    _logger: Logger,
  ) {
    const config = core.config;
    const ctx: GrpcContext = { core, tracker: this.tracker, forwardHeader: headerMatcher(config.grpcHeaderForwardPattern, 'grpcHeaderForwardPattern') };
    const protos = loadProtos('string');
    const restricted = RestrictedApis.parse(config.grpcRestrictedProtocol, 'grpcRestrictedProtocol', GRPC_RESTRICTED_PREFIX);
    const max = config.grpcMaxMessageSize;
    const routes: GrpcRoutes = new Map();
    addService(routes, methodsOf(protos.inference), restrict(inferenceService(ctx), restricted), {
      maxReceive: max,
      maxSend: max,
      codecs: INFER_CODECS,
      buffers: core.requestBuffers,
    });
    addService(routes, methodsOf(protos.health), restrict(healthService(ctx), restricted), { maxReceive: max, maxSend: max });
    // TLS is read now, so that a bad setting fails `new Triton()` rather than `run()`.
    const tls = serverTlsMaterial('grpc', config);
    this.port = new GrpcHttp2Port({ ...(tls ? { tls } : {}), window: config.grpcFlowControlWindow }, (stream, headers) => routeGrpcStream(stream, headers, routes));
  }

  /** Listens on `grpcAddress:grpcPort` (over TLS with `grpcUseSsl`); resolves with the bound port. */
  start(): Promise<number> {
    return this.listen(this.core.config.grpcPort);
  }

  /** Listens on `grpcAddress:port`; with `reusePort`, other threads may listen on it too. */
  listen(port: number, reusePort = false): Promise<number> {
    return this.port.listen(this.core.config.grpcAddress, port, reusePort);
  }

  /** Refuses new calls from now on; calls in progress go on. */
  stopAccepting(): void {
    this.tracker.stopAccepting();
  }

  /** Fails the calls still in progress and closes every connection; resolves once they are closed. */
  forceClose(): Promise<void> {
    this.tracker.stopAccepting();
    return new Promise<void>((resolve) => {
      // Calls whose model work has just finished write their response in this turn of the event loop; let them.
      setImmediate(() => {
        this.tracker.failAll(tritonError('stoppedBeforeEnd'));
        resolve(this.port.close(FORCE_GRACE_MS));
      });
    });
  }
}

/** The methods of a service as proto-loader loaded them. */
function methodsOf(service: object): Readonly<Record<string, MethodDescription>> {
  return service as Readonly<Record<string, MethodDescription>>;
}

/** A grpc-js-shaped handler: `(call, callback)` for a unary RPC, `(call)` for a streaming one. */
type Handler = (call: GuardedCall, callback?: (status: object) => void) => void;

/** What the guard reads of a call, and how it ends a streaming one. */
interface GuardedCall {
  readonly metadata: Pick<CallMetadata, 'get'>;
  emit(event: 'error', status: object): boolean;
}

/**
 * Guards every RPC of `service` whose API group is restricted: a call without the group's metadata ends with
 * UNAVAILABLE before its handler runs, as Triton's does.
 */
function restrict(service: Readonly<Record<string, unknown>>, restricted: RestrictedApis): Readonly<Record<string, unknown>> {
  if (!restricted.any) return service;
  const guarded: Record<string, unknown> = {};
  for (const [method, handler] of Object.entries(service)) {
    const group = GRPC_API_GROUPS[method];
    if (group === undefined || restricted.restriction(group) === undefined) {
      guarded[method] = handler;
      continue;
    }
    const guard: Handler = (call, callback) => {
      const missing = restricted.missingHeader(group, (name) => {
        const values = call.metadata.get(name);
        return values.length === 1 ? String(values[0]) : undefined;
      });
      if (missing === undefined) return (handler as Handler)(call, callback);
      const status = toGrpcStatus(grpcRestrictedError(missing));
      if (callback) callback(status);
      else call.emit('error', status);
    };
    guarded[method] = guard;
  }
  return guarded;
}

/** The decoder of the infer RPCs: the message's bytes as received (decompressed), parsed later by the handler. */
function receivedBytes(bytes: Buffer): Buffer {
  return bytes;
}
