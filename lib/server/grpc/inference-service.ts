import type { ServerUnaryCall, UntypedHandleCall, UntypedServiceImplementation, sendUnaryData } from '@grpc/grpc-js';
import { TritonError, tritonError } from '../../base/errors';
import { stoppingError, type GrpcContext } from './grpc-context';
import { toGrpcStatus } from './grpc-status';
import type {
  ModelConfigResponseMessage,
  ModelMetadataResponseMessage,
  ModelRequestMessage,
  ServerMetadataResponseMessage,
} from '../../protocol/messages';
import { modelInfer } from './model-infer';
import { versionReady } from '../../model/serving-version';
import { loadOverride } from '../extensions';
import { modelStreamInfer } from './model-stream-infer';

/**
 * Handlers of `inference.GRPCInferenceService`. Health-like RPCs (ServerLive, ServerReady, ModelReady)
 * keep answering while the server stops; every other RPC is then refused with UNAVAILABLE.
 */
export function inferenceService(ctx: GrpcContext): UntypedServiceImplementation {
  const { core } = ctx;
  const repo = core.repository;
  const service: UntypedServiceImplementation = {
    ServerLive: unary(ctx, true, () => ({ live: core.isLive() })),
    ServerReady: unary(ctx, true, () => ({ ready: ctx.tracker.accepting && core.isReady() })),
    ModelReady: unary(ctx, true, (req: ModelRequestMessage) => ({ ready: ctx.tracker.accepting && isModelReady(ctx, req) })),
    ServerMetadata: unary(ctx, false, (): ServerMetadataResponseMessage => core.metadata()),
    ModelMetadata: unary(ctx, false, (req: ModelRequestMessage): ModelMetadataResponseMessage => repo.metadataOf(req.name, req.version)),
    ModelConfig: unary(ctx, false, (req: ModelRequestMessage): ModelConfigResponseMessage => ({ config: repo.get(req.name, req.version).configJson })),
    ModelStatistics: unary(ctx, false, async (req: ModelRequestMessage) => ({ model_stats: await core.modelStatistics(req.name || undefined, req.version || undefined) })),
    SystemSharedMemoryStatus: unary(ctx, false, (req: { name?: string }) => ({
      regions: Object.fromEntries(core.sharedMemory.status(req.name || undefined).map((r) => [r.name, r])),
    })),
    SystemSharedMemoryRegister: unary(ctx, false, async (req: { name?: string; key?: string; offset?: unknown; byte_size?: unknown }) => {
      await core.sharedMemory.register(req.name ?? '', req.key ?? '', Number(req.offset ?? 0), Number(req.byte_size ?? 0));
      return {};
    }),
    SystemSharedMemoryUnregister: unary(ctx, false, async (req: { name?: string }) => {
      await core.sharedMemory.unregister(req.name || undefined);
      return {};
    }),
    // No CUDA IPC here: no region is ever registered, so status lists none and unregister has nothing to do.
    CudaSharedMemoryStatus: unary(ctx, false, (req: { name?: string }) => {
      if (req.name) throw new TritonError('NOT_FOUND', `Unable to find cuda shared memory region: '${req.name}'`);
      return { regions: {} };
    }),
    CudaSharedMemoryRegister: unary(ctx, false, () => {
      throw tritonError('cudaSharedMemory');
    }),
    CudaSharedMemoryUnregister: unary(ctx, false, () => ({})),
    RepositoryIndex: unary(ctx, false, async (req: { repository_name?: string; ready?: boolean }) => {
      refuseRepositoryName(req.repository_name);
      return { models: await core.repositoryIndex(req.ready === true) };
    }),
    RepositoryModelLoad: unary(ctx, false, async (req: RepositoryModelRequest) => {
      refuseRepositoryName(req.repository_name);
      const parameters = Object.fromEntries(Object.entries(req.parameters ?? {}).map(([k, p]) => [k, repositoryParameter(p)]));
      await core.loadModel(req.model_name ?? '', loadOverride(parameters, req.model_name ?? ''));
      return {};
    }),
    RepositoryModelUnload: unary(ctx, false, async (req: RepositoryModelRequest) => {
      refuseRepositoryName(req.repository_name);
      await core.unloadModel(req.model_name ?? '', req.parameters?.unload_dependents?.bool_param === true);
      return {};
    }),
    TraceSetting: unary(ctx, false, async (req: { settings?: Record<string, { value?: string[] }>; model_name?: string }) => {
      // An empty value list clears a model's setting, as `null` does over HTTP.
      const entries = Object.entries(req.settings ?? {}).map(([k, v]) => [k, v.value && v.value.length > 0 ? (k === 'trace_level' ? v.value : v.value[0]) : null]);
      const settings = await core.traceSettings(req.model_name || undefined, entries.length > 0 ? Object.fromEntries(entries) : undefined);
      return { settings: Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, { value: Array.isArray(v) ? v : [v] }])) };
    }),
    LogSettings: unary(ctx, false, async (req: { settings?: Record<string, SettingValue> }) => {
      const entries = Object.entries(req.settings ?? {});
      const update = Object.fromEntries(entries.map(([k, v]) => [k, v.bool_param ?? (v.uint32_param !== undefined ? Number(v.uint32_param) : v.string_param)]));
      const settings = await core.logSettings(entries.length > 0 ? update : undefined);
      return {
        settings: Object.fromEntries(
          Object.entries(settings).map(([k, v]) => [k, typeof v === 'boolean' ? { bool_param: v } : typeof v === 'number' ? { uint32_param: v } : { string_param: v }]),
        ),
      };
    }),
    ModelInfer: modelInfer(ctx) as UntypedHandleCall,
    ModelStreamInfer: modelStreamInfer(ctx) as UntypedHandleCall,
  };
  return service;
}

/** ModelReady answers `ready: false`, not an error, for a model or version that is unknown or not ready. */
function isModelReady(ctx: GrpcContext, req: ModelRequestMessage): boolean {
  try {
    return versionReady(ctx.core.repository, req.name, req.version);
  } catch (err) {
    if (err instanceof TritonError && err.code === 'MODEL_NOT_FOUND') return false;
    throw err;
  }
}

/** `LogSettingsRequest.SettingValue`: one of a bool, a uint32 or a string. */
interface SettingValue {
  bool_param?: boolean;
  uint32_param?: number;
  string_param?: string;
}

/** `RepositoryModelLoadRequest` / `RepositoryModelUnloadRequest`. */
interface RepositoryParameter {
  parameter_choice?: string;
  bool_param?: boolean;
  int64_param?: unknown;
  string_param?: string;
  bytes_param?: Uint8Array;
}

interface RepositoryModelRequest {
  repository_name?: string;
  model_name?: string;
  parameters?: Record<string, RepositoryParameter>;
}

function refuseRepositoryName(name: string | undefined): void {
  if (name) throw new TritonError('UNSUPPORTED', "'repository_name' specification is not supported");
}

/**
 * A unary handler: its value (or what its promise resolves to) is the answer, and what it throws (or rejects with)
 * the call's status. Refused with UNAVAILABLE once the server stops, unless `whileStopping` (the health RPCs).
 */
function unary<Req, Res>(ctx: GrpcContext, whileStopping: boolean, fn: (req: Req) => Res | Promise<Res>): UntypedHandleCall {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    if (!whileStopping && !ctx.tracker.accepting) return callback(toGrpcStatus(stoppingError()));
    let response: Res | Promise<Res>;
    try {
      response = fn(call.request);
    } catch (err) {
      return callback(toGrpcStatus(err));
    }
    if (!(response instanceof Promise)) return callback(null, response);
    response.then(
      (value) => callback(null, value),
      (err: unknown) => callback(toGrpcStatus(err)),
    );
  };
}

/** The value a `ModelRepositoryParameter` holds (its oneof names the field that is set). */
function repositoryParameter(p: RepositoryParameter): string | Buffer | boolean | number | undefined {
  switch (p.parameter_choice) {
    case 'bool_param':
      return p.bool_param;
    case 'int64_param':
      return Number(p.int64_param);
    case 'string_param':
      return p.string_param;
    case 'bytes_param':
      return p.bytes_param === undefined ? undefined : Buffer.from(p.bytes_param.buffer, p.bytes_param.byteOffset, p.bytes_param.byteLength);
    default:
      return undefined;
  }
}
