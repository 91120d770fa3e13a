import { headerMatcher } from '../forward-headers';
import * as grpc from '@grpc/grpc-js';
import type * as http2 from 'node:http2';
import type { ModelInferResponseMessage } from '../../protocol/messages';
import { TritonError } from '../../errors';
import type { Logger } from '../../logger';
import type { ServerCore, Transport } from '../server-core';
import { CallTracker } from './call-tracker';
import { grpcServerCredentials } from './grpc-credentials';
import type { GrpcContext } from './grpc-context';
import { healthService } from './health-service';
import { shapeHttp2Servers } from './grpc-http2';
import { serveDirectUnary, type DirectUnaryMethod, type UnaryHandler } from './direct-unary';
import { inferenceService } from './inference-service';
import { encodeFramedModelInferResponse, encodeModelInferResponse, encodeModelStreamInferResponse } from './infer-response-encoder';
import { loadProtos } from '../../protocol/protos';
import { toGrpcStatus } from './grpc-status';
import { GRPC_API_GROUPS, GRPC_RESTRICTED_PREFIX, RestrictedApis, grpcRestrictedError } from '../restricted-api';

/** ModelInfer's path, which the server serves on node:http2 directly (see direct-unary.ts). */
const MODEL_INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';

/** How long a forced close lets calls it has just failed send their status before it cuts connections. */
const FORCE_GRACE_MS = 2000;

/**
 * The gRPC endpoint: `inference.GRPCInferenceService` and `grpc.health.v1.Health` on grpc-js, with
 * a finite message size limit (`grpcMaxMessageSize`, which grpc-js applies to a compressed request's inflated
 * size while it inflates) and gzip/deflate request compression.
 *
 * Stopping has two levels, as grpc-js has: `stopAccepting` refuses new calls (health answers
 * NOT_SERVING) while in-flight calls finish; `forceClose` fails what is left with UNAVAILABLE, closes
 * connections gracefully, and cuts them after a short grace time.
 */
export class GrpcServer implements Transport {
  readonly name = 'grpc';
  private readonly server: grpc.Server;
  private readonly tracker = new CallTracker();
  private readonly credentials: grpc.ServerCredentials;

  constructor(
    private readonly core: ServerCore,
    logger: Logger,
  ) {
    // Read now, so that a bad TLS setting fails `new Triton()` rather than `run()`.
    this.credentials = grpcServerCredentials(core.config);
    const max = core.config.grpcMaxMessageSize;
    this.server = new grpc.Server({ 'grpc.max_receive_message_length': max, 'grpc.max_send_message_length': max });
    const ctx: GrpcContext = { core, tracker: this.tracker, forwardHeader: headerMatcher(core.config.grpcHeaderForwardPattern, 'grpcHeaderForwardPattern') };
    const protos = loadProtos('string');
    const restricted = RestrictedApis.parse(core.config.grpcRestrictedProtocol, 'grpcRestrictedProtocol', GRPC_RESTRICTED_PREFIX);
    const inference = restrict(inferenceService(ctx), restricted);
    this.server.addService(withDirectCodecs(protos.inference), inference);
    const modelInfer: DirectUnaryMethod<ModelInferResponseMessage> = {
      path: MODEL_INFER_PATH,
      handler: inference.ModelInfer as unknown as UnaryHandler<ModelInferResponseMessage>,
      encode: encodeFramedModelInferResponse,
      buffers: core.requestBuffers,
      maxReceive: max,
      maxSend: max,
    };
    const route = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) =>
      headers[':path'] === MODEL_INFER_PATH && serveDirectUnary(stream, headers, modelInfer);
    if (!shapeHttp2Servers(this.server, core.config.grpcFlowControlWindow, route)) {
      logger.warn('gRPC: this grpc-js does not let its HTTP/2 servers be shaped; ModelInfer runs on grpc-js with 64 KiB flow-control windows, slower on large tensors');
    }
    this.server.addService(protos.health, restrict(healthService(ctx), restricted));
  }

  /** Listens on `grpcAddress:grpcPort` (over TLS with `grpcUseSsl`); resolves with the bound port. */
  start(): Promise<number> {
    const { grpcAddress, grpcPort } = this.core.config;
    const host = grpcAddress.includes(':') ? `[${grpcAddress}]` : grpcAddress;
    return new Promise((resolve, reject) => {
      this.server.bindAsync(`${host}:${grpcPort}`, this.credentials, (err, port) => {
        if (err) reject(new TritonError('INTERNAL', `gRPC server could not listen on ${host}:${grpcPort}: ${err.message}`, { cause: err }));
        else resolve(port);
      });
    });
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
        this.tracker.failAll(new TritonError('UNAVAILABLE', 'Server stopped before the request finished'));
        const timer = setTimeout(() => {
          this.server.forceShutdown();
          resolve();
        }, FORCE_GRACE_MS);
        this.server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    });
  }
}

/**
 * Guards every RPC of `service` whose API group is restricted: a call without the group's metadata ends with
 * UNAVAILABLE before its handler runs, as Triton's does.
 */
function restrict(service: grpc.UntypedServiceImplementation, restricted: RestrictedApis): grpc.UntypedServiceImplementation {
  if (!restricted.any) return service;
  const guarded: grpc.UntypedServiceImplementation = {};
  for (const [method, handler] of Object.entries(service)) {
    const group = GRPC_API_GROUPS[method];
    if (group === undefined || restricted.restriction(group) === undefined) {
      guarded[method] = handler;
      continue;
    }
    guarded[method] = ((call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>, callback?: grpc.sendUnaryData<unknown>) => {
      const missing = restricted.missingHeader(group, (name) => {
        const values = call.metadata.get(name);
        return values.length === 1 ? String(values[0]) : undefined;
      });
      if (missing === undefined) return (handler as (...args: unknown[]) => void)(call, callback);
      const status = toGrpcStatus(grpcRestrictedError(missing));
      if (callback) callback(status);
      else call.emit('error', status);
    }) as grpc.UntypedHandleCall;
  }
  return guarded;
}

/**
 * The inference service with the direct codecs on the two infer RPCs (proto-loader's stay on every
 * other RPC). Their requests arrive as bytes, parsed by the handlers (`parseModelInferRequest`), so that a
 * malformed message is answered in order with the call's other messages. A copy: the loaded definition is
 * shared with clients and must stay as it is.
 */
function withDirectCodecs(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const infer = service.ModelInfer as grpc.MethodDefinition<unknown, unknown>;
  const stream = service.ModelStreamInfer as grpc.MethodDefinition<unknown, unknown>;
  return {
    ...service,
    ModelInfer: { ...infer, requestDeserialize: receivedBytes, responseSerialize: encodeModelInferResponse } as grpc.MethodDefinition<unknown, unknown>,
    ModelStreamInfer: { ...stream, requestDeserialize: receivedBytes, responseSerialize: encodeModelStreamInferResponse } as grpc.MethodDefinition<unknown, unknown>,
  };
}

/** The deserializer of the infer RPCs: the message's bytes as received (decompressed), parsed later by the handler. */
function receivedBytes(bytes: Buffer): Buffer {
  return bytes;
}
