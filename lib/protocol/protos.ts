import * as path from 'node:path';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';

/** Folder holding `grpc_service.proto`, `model_config.proto` and `health.proto` (copied next to the build). */
export const PROTO_DIR = path.join(__dirname, 'proto');

/** How 64-bit integers come out of decoded messages: strings keep every bit, numbers are simpler. */
export type LongsAs = 'string' | 'number';

/** The two gRPC services tstriton speaks, loaded from the .proto files. */
export interface InferenceProtos {
  /** `inference.GRPCInferenceService`, Triton's field numbers. */
  readonly inference: ServiceDefinition;
  /** `grpc.health.v1.Health`. */
  readonly health: ServiceDefinition;
}

const cache = new Map<LongsAs, InferenceProtos>();

/**
 * Loads the services with snake_case field names (as Triton's clients send them), enums as names,
 * bytes as Buffers (views on the received message, not copies) and defaults filled in.
 * `oneofs` is on for `string` longs (the server reads `parameter_choice`) and off for `number` (the
 * client turns ModelConfig back into JSON, where virtual oneof fields do not belong).
 */
export function loadProtos(longs: LongsAs): InferenceProtos {
  let protos = cache.get(longs);
  if (!protos) {
    const options: Options = {
      keepCase: true,
      longs: longs === 'string' ? String : Number,
      enums: String,
      bytes: Buffer,
      defaults: true,
      oneofs: longs === 'string',
      includeDirs: [PROTO_DIR],
    };
    const defs: PackageDefinition = loadSync(['grpc_service.proto', 'health.proto'], options);
    protos = {
      inference: defs['inference.GRPCInferenceService'] as ServiceDefinition,
      health: defs['grpc.health.v1.Health'] as ServiceDefinition,
    };
    cache.set(longs, protos);
  }
  return protos;
}
