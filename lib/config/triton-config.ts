import { IsArray, IsBoolean, IsIn, IsInt, IsNumber, IsOptional, IsString, Max, Min } from './class-validator';
import { TritonError } from '../base/errors';
import { assignKnown } from './validate';

/** Log levels, least to most verbose. */
export const LOG_LEVELS = ['silent', 'error', 'warn', 'info', 'debug'] as const;
/** A log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Triton's model control modes: `none` loads every model at start and refuses load/unload; `explicit` loads the
 * `loadModel` ones (all bound models) and serves load/unload; `poll` also follows the repositories on disk.
 */
export const MODEL_CONTROL_MODES = ['none', 'explicit', 'poll'] as const;
/** A model control mode. */
export type ModelControlMode = (typeof MODEL_CONTROL_MODES)[number];

/**
 * Which onnxruntime execution provider a GPU instance (`gpu:N`, `KIND_GPU`) runs on: `auto` takes CUDA when its
 * libraries load, else WebGPU (onnxruntime-node's bundled Dawn over Vulkan); `cuda` and `webgpu` take that one only.
 */
export const GPU_EXECUTION_PROVIDERS = ['auto', 'cuda', 'webgpu'] as const;
/** A GPU execution provider setting. */
export type GpuExecutionProvider = (typeof GPU_EXECUTION_PROVIDERS)[number];

/**
 * How log lines are written: Triton's `default` (`I0131 12:34:56.789 1234] message`) and `ISO8601`
 * (`2026-01-31T12:34:56Z I 1234] message`) plain lines, or `json` (one JSON object a line, pino's).
 */
export const LOG_FORMATS = ['default', 'ISO8601', 'json'] as const;
/** A log format. */
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Plain-object form of TritonConfig. */
export interface TritonConfigInit {
  httpAddress?: string;
  httpPort?: number;
  allowHttp?: boolean;
  httpThreadCount?: number;
  grpcAddress?: string;
  grpcPort?: number;
  allowGrpc?: boolean;
  metricsAddress?: string;
  metricsPort?: number;
  allowMetrics?: boolean;
  logLevel?: LogLevel;
  logFormat?: LogFormat;
  exitOnError?: boolean;
  exitTimeoutSeconds?: number;
  httpMaxInputSize?: number;
  jsonMaxDepth?: number;
  grpcMaxMessageSize?: number;
  grpcFlowControlWindow?: number;
  requestBufferPoolByteSize?: number;
  incrementalMarkingSoftTrigger?: number;
  incrementalMarkingHardTrigger?: number;
  strictReadiness?: boolean;
  serverVersion?: string;
  httpHeaderForwardPattern?: string;
  grpcHeaderForwardPattern?: string;
  responseCacheByteSize?: number;
  allowSharedMemory?: boolean;
  traceFile?: string;
  traceConfig?: string;
  metricsConfig?: string;
  metricsIntervalMs?: number;
  allowCpuMetrics?: boolean;
  allowGpuMetrics?: boolean;
  nvidiaSmiPath?: string;
  gpuExecutionProvider?: GpuExecutionProvider;
  modelControlMode?: ModelControlMode;
  modelRepository?: readonly string[];
  loadModel?: readonly string[];
  repositoryPollSeconds?: number;
  strictModelConfig?: boolean;
  disableAutoCompleteConfig?: boolean;
  backendConfig?: string;
  modelLoadThreadCount?: number;
  httpRestrictedApi?: string;
  grpcRestrictedProtocol?: string;
  grpcUseSsl?: boolean;
  grpcUseSslMutual?: boolean;
  grpcServerCert?: string;
  grpcServerKey?: string;
  grpcRootCert?: string;
  httpUseSsl?: boolean;
  httpUseSslMutual?: boolean;
  httpServerCert?: string;
  httpServerKey?: string;
  httpRootCert?: string;
  openai?: boolean;
  openaiPort?: number;
  openaiApiKey?: string;
}

const KEYS = [
  'httpAddress',
  'httpPort',
  'allowHttp',
  'httpThreadCount',
  'grpcAddress',
  'grpcPort',
  'allowGrpc',
  'metricsAddress',
  'metricsPort',
  'allowMetrics',
  'logLevel',
  'logFormat',
  'exitOnError',
  'exitTimeoutSeconds',
  'httpMaxInputSize',
  'jsonMaxDepth',
  'grpcMaxMessageSize',
  'grpcFlowControlWindow',
  'requestBufferPoolByteSize',
  'incrementalMarkingSoftTrigger',
  'incrementalMarkingHardTrigger',
  'strictReadiness',
  'serverVersion',
  'httpHeaderForwardPattern',
  'grpcHeaderForwardPattern',
  'responseCacheByteSize',
  'allowSharedMemory',
  'traceFile',
  'traceConfig',
  'metricsConfig',
  'metricsIntervalMs',
  'allowCpuMetrics',
  'allowGpuMetrics',
  'nvidiaSmiPath',
  'gpuExecutionProvider',
  'modelControlMode',
  'modelRepository',
  'loadModel',
  'repositoryPollSeconds',
  'strictModelConfig',
  'disableAutoCompleteConfig',
  'backendConfig',
  'modelLoadThreadCount',
  'httpRestrictedApi',
  'grpcRestrictedProtocol',
  'grpcUseSsl',
  'grpcUseSslMutual',
  'grpcServerCert',
  'grpcServerKey',
  'grpcRootCert',
  'httpUseSsl',
  'httpUseSslMutual',
  'httpServerCert',
  'httpServerKey',
  'httpRootCert',
  'openai',
  'openaiPort',
  'openaiApiKey',
] as const;

/** Server settings. Defaults are Triton's; every field can also come from a `TSTRITON_*` variable. */
export class TritonConfig {
  @IsString()
  httpAddress = '0.0.0.0';

  /** HTTP port; 0 picks a free one. */
  @IsInt()
  @Min(0)
  @Max(65535)
  httpPort = 8000;

  @IsBoolean()
  allowHttp = true;

  /**
   * Front-end threads (Triton's `--http-thread-count`): each accepts connections on the HTTP, gRPC and OpenAI
   * ports and parses, decodes, encodes and writes requests, in front of the one core thread that batches and runs
   * them. 0 (the default) picks one thread per core beyond the core thread's own, at most 8; 1 serves every port
   * on the core thread itself. See docs/threads.md.
   */
  @IsInt()
  @Min(0)
  @Max(64)
  httpThreadCount = 0;

  @IsString()
  grpcAddress = '0.0.0.0';

  @IsInt()
  @Min(0)
  @Max(65535)
  grpcPort = 8001;

  @IsBoolean()
  allowGrpc = true;

  @IsString()
  metricsAddress = '0.0.0.0';

  @IsInt()
  @Min(0)
  @Max(65535)
  metricsPort = 8002;

  @IsBoolean()
  allowMetrics = true;

  @IsIn(LOG_LEVELS, { message: `logLevel must be one of ${LOG_LEVELS.join(', ')}` })
  logLevel: LogLevel = 'info';

  /**
   * Triton's `--log-format`: `default` or `ISO8601` plain lines, or `json` lines; `json` when unset.
   * `tstriton serve` sets it, when neither its flag nor its variable does, to `default` when stdout is a terminal
   * and `json` otherwise (a pipe, a file, a container's log).
   */
  @IsOptional()
  @IsIn(LOG_FORMATS, { message: `logFormat must be one of ${LOG_FORMATS.join(', ')}` })
  logFormat?: LogFormat;

  /**
   * Triton's `--exit-on-error`: whether a model that fails to load while the server starts stops the start.
   * `true`: `run()` stops the server and rejects, naming the model and why (`tstriton serve`'s default, as
   * tritonserver's). `false`: the server serves the models that loaded; the others are listed with their reason
   * and keep the server not ready under `strictReadiness`. Unset (the default of `new Triton()`): repository
   * models as with `false`, a model bound in code as with `true`.
   */
  @IsOptional()
  @IsBoolean()
  exitOnError?: boolean;

  /** How long stop() waits for in-flight requests before it forces the close. */
  @Min(0)
  exitTimeoutSeconds = 30;

  /** Largest HTTP request body in bytes, counted after decompression (Triton: 64 MiB). */
  @IsInt()
  @Min(1)
  httpMaxInputSize = 64 * 1024 * 1024;

  /** Deepest JSON nesting accepted in a request (Triton: 100). */
  @IsInt()
  @Min(1)
  jsonMaxDepth = 100;

  /**
   * Largest gRPC message in bytes, received or sent; a compressed request is measured after decompression.
   * -1 means unlimited (Triton's behaviour), which lets one small compressed message take gigabytes.
   */
  @IsInt()
  @Min(-1)
  grpcMaxMessageSize = 64 * 1024 * 1024;

  /**
   * HTTP/2 flow-control window of each gRPC call, in bytes: how much of a request a client may send before it
   * must wait for the server to acknowledge; the connection's window is four times this. HTTP/2's default,
   * 64 KiB, costs a round trip per 64 KiB of a large tensor.
   */
  @IsInt()
  @Min(65_535)
  @Max(2 ** 31 - 1)
  grpcFlowControlWindow = 8 * 1024 * 1024;

  /**
   * Bytes of memory kept for reuse by request messages of 1 MiB or more (gRPC ModelInfer and HTTP bodies with binary tensors):
   * such a request is received into a buffer from this pool, given back once its response is sent, so large
   * tensors do not make work for the garbage collector. A request's input tensors are then valid until its
   * response is sent (copy one to keep it longer). 0 turns the pool off: every message gets a buffer of its own.
   */
  @IsInt()
  @Min(0)
  requestBufferPoolByteSize = 64 * 1024 * 1024;

  /**
   * When V8 starts marking the heap for a full garbage collection, in percent of the room left below the limit it
   * set at the last one: from a task past the soft trigger, at once past the hard one. Process-wide (V8's
   * `--incremental-marking-soft-trigger` and `--incremental-marking-hard-trigger`, set when the server starts; a
   * value given to node on its command line wins). V8's own rule, which weighs the room against its young
   * generation (16 MB), started marking within milliseconds of each full collection on a small heap taking in
   * large tensors, so the server marked without pause. The limit stays V8's. 0 leaves V8's rule.
   */
  @IsInt()
  @Min(0)
  @Max(100)
  incrementalMarkingSoftTrigger = 80;

  /** See `incrementalMarkingSoftTrigger`. */
  @IsInt()
  @Min(0)
  @Max(100)
  incrementalMarkingHardTrigger = 95;

  /** Server readiness also requires every model to be ready. */
  @IsBoolean()
  strictReadiness = true;

  /** HTTP headers whose names match this regular expression reach the callable as string parameters. */
  @IsOptional()
  @IsString()
  httpHeaderForwardPattern?: string;

  /** gRPC metadata keys matching this regular expression reach the callable as string parameters. */
  @IsOptional()
  @IsString()
  grpcHeaderForwardPattern?: string;

  /**
   * Size in bytes of the response cache shared by the models that enable `responseCache` (Triton's
   * `--cache-config local,size=N`); 0 means no cache.
   */
  @IsInt()
  @Min(0)
  responseCacheByteSize = 0;

  /**
   * Lets clients register system shared-memory regions and pass tensors through them (Triton's
   * `--allow-client-shm`). Off by default: a client that may register a region can read and write any POSIX
   * shared-memory object the server's user can open.
   */
  @IsBoolean()
  allowSharedMemory = false;

  /** Where the trace extension writes traces (Triton's `--trace-file`); tracing needs it. */
  @IsOptional()
  @IsString()
  traceFile?: string;

  /**
   * Triton's `--trace-config` settings (the flag given several times, entries joined with `;`): `mode=opentelemetry`,
   * `level=TIMESTAMPS`, `rate=N`, `count=N`, and the OpenTelemetry exporter's `opentelemetry,url=<OTLP/HTTP URL>`,
   * `opentelemetry,resource=<key>=<value>`, `opentelemetry,bsp_max_queue_size=N`, `bsp_schedule_delay=ms`,
   * `bsp_max_export_batch_size=N` (docs/trace.md).
   */
  @IsOptional()
  @IsString()
  traceConfig?: string;

  /**
   * Triton's `--metrics-config` settings, entries joined with `;`: `summary_latencies=true`,
   * `summary_quantiles=0.5:0.05,0.99:0.001`, `histogram_latencies=true`, `counter_latencies=false`
   * (docs/statistics.md).
   */
  @IsOptional()
  @IsString()
  metricsConfig?: string;

  /** Triton's `--metrics-interval-ms`: how often CPU and GPU metrics are sampled again (at most, when scraped). */
  @IsInt()
  @Min(1)
  metricsIntervalMs = 2000;

  /** Triton's `--allow-cpu-metrics`: `nv_cpu_utilization` and `nv_cpu_memory_*` (Linux). */
  @IsBoolean()
  allowCpuMetrics = true;

  /** Triton's `--allow-gpu-metrics`: `nv_gpu_*` per GPU, read with nvidia-smi when a GPU is present. */
  @IsBoolean()
  allowGpuMetrics = true;

  /** The nvidia-smi the GPU metrics run (a name on the PATH, or a path). */
  @IsString()
  nvidiaSmiPath = 'nvidia-smi';

  /**
   * The execution provider of the ONNX models' GPU instances (`gpu:N`, `instance_group { kind: KIND_GPU }`):
   * `auto` (the default) takes onnxruntime's CUDA provider when its libraries load (CUDA 12, cuDNN 9 and
   * onnxruntime-node's CUDA provider files), else its bundled WebGPU provider (Dawn over Vulkan: the Vulkan and
   * GL loaders and the NVIDIA driver's Vulkan ICD); `cuda` or `webgpu` takes that one only. A model's own
   * `gpu_execution_accelerator` (or `onnxModel({ gpuExecutionProvider })`) wins. WebGPU runs on the first GPU
   * only: it refuses `gpu:N` with N > 0 (docs/onnx.md#gpus).
   */
  @IsIn(GPU_EXECUTION_PROVIDERS, { message: `gpuExecutionProvider must be one of ${GPU_EXECUTION_PROVIDERS.join(', ')}` })
  gpuExecutionProvider: GpuExecutionProvider = 'auto';

  /**
   * Triton's `--model-control-mode`: `none` (the default) loads every bound model at start and refuses the
   * repository load/unload APIs; `explicit` serves them.
   */
  @IsIn(MODEL_CONTROL_MODES, { message: `modelControlMode must be one of ${MODEL_CONTROL_MODES.join(', ')}` })
  modelControlMode: ModelControlMode = 'none';

  /**
   * Triton's `--model-repository` (repeatable): folders in Triton's layout (`<model>/config.pbtxt`,
   * `<model>/<version>/model.onnx`) served beside the bound models. `TSTRITON_MODEL_REPOSITORY` takes a
   * comma-separated list.
   */
  @IsArray()
  @IsString({ each: true })
  modelRepository: string[] = [];

  /**
   * Triton's `--load-model` (repeatable): with `explicit` model control, the repository models loaded at start
   * (`*` for all); the others stay unloaded until a load request. Comma-separated in `TSTRITON_LOAD_MODEL`.
   */
  @IsArray()
  @IsString({ each: true })
  loadModel: string[] = [];

  /** Triton's `--repository-poll-secs`: how often `poll` model control reads the repositories again. */
  @IsNumber()
  @Min(0.01)
  repositoryPollSeconds = 15;

  /**
   * Triton's `--strict-model-config`, the older name of `disableAutoCompleteConfig` (deprecated there too): when
   * true, every repository model needs a complete `config.pbtxt`; when false (the default, as Triton's), what is
   * missing is completed from the ONNX model's signature.
   */
  @IsBoolean()
  strictModelConfig = false;

  /**
   * Triton's `--disable-auto-complete-config`: every repository model needs a complete `config.pbtxt`
   * (`max_batch_size`, `input` and `output` for an ONNX model); nothing is read from the ONNX model to complete
   * it. `strictModelConfig` is its older name, and either turns it on.
   */
  @IsBoolean()
  disableAutoCompleteConfig = false;

  /**
   * Triton's `--backend-config` settings, entries joined with `;`: `onnxruntime,default-max-batch-size=N` (or
   * `default-max-batch-size=N` for every backend) is the `max_batch_size` auto-complete gives an ONNX model that
   * can batch and whose config does not say (4 when unset, as Triton's; 0 leaves such models without a batch
   * dimension). See docs/repository.md.
   */
  @IsOptional()
  @IsString()
  backendConfig?: string;

  /** Triton's `--model-load-thread-count`: how many models load at once while the server starts. */
  @IsInt()
  @Min(1)
  @Max(1024)
  modelLoadThreadCount = 4;

  /**
   * Triton's `--http-restricted-api`: `<api>[,<api>...]:<header>=<value>`, several separated by `;`. Requests to
   * an API in a restricted group need the header with that value; others get 403.
   */
  @IsOptional()
  @IsString()
  httpRestrictedApi?: string;

  /**
   * Triton's `--grpc-restricted-protocol`, same syntax; the client sends metadata `triton-grpc-protocol-<header>`,
   * and a call without it gets UNAVAILABLE.
   */
  @IsOptional()
  @IsString()
  grpcRestrictedProtocol?: string;

  /** Serve gRPC over TLS with `grpcServerCert` and `grpcServerKey` (Triton's `--grpc-use-ssl`). */
  @IsBoolean()
  grpcUseSsl = false;

  /** Also require client certificates signed by `grpcRootCert` (Triton's `--grpc-use-ssl-mutual`). */
  @IsBoolean()
  grpcUseSslMutual = false;

  /** PEM file of the gRPC server certificate (chain). */
  @IsOptional()
  @IsString()
  grpcServerCert?: string;

  /** PEM file of the gRPC server private key. */
  @IsOptional()
  @IsString()
  grpcServerKey?: string;

  /** PEM file of the CA that signs client certificates, for mutual TLS. */
  @IsOptional()
  @IsString()
  grpcRootCert?: string;

  /** Serve HTTP over TLS (HTTPS) with `httpServerCert` and `httpServerKey`; Triton needs a proxy for this. */
  @IsBoolean()
  httpUseSsl = false;

  /** Also require HTTPS client certificates signed by `httpRootCert`. */
  @IsBoolean()
  httpUseSslMutual = false;

  /** PEM file of the HTTPS server certificate (chain). */
  @IsOptional()
  @IsString()
  httpServerCert?: string;

  /** PEM file of the HTTPS server private key. */
  @IsOptional()
  @IsString()
  httpServerKey?: string;

  /** PEM file of the CA that signs HTTPS client certificates, for mutual TLS. */
  @IsOptional()
  @IsString()
  httpRootCert?: string;

  /** Version reported by server metadata. */
  @IsOptional()
  @IsString()
  serverVersion?: string;

  /** Serve the OpenAI-compatible API (`/v1/chat/completions`, ...) on the HTTP port (docs/openai.md). */
  @IsBoolean()
  openai = false;

  /** With `openai`, also serve the OpenAI-compatible API on this port of its own (0 picks one); -1: none. */
  @IsInt()
  @Min(-1)
  @Max(65535)
  openaiPort = -1;

  /** With `openai`, every `/v1` request needs `Authorization: Bearer <openaiApiKey>`, as OpenAI clients send it. */
  @IsOptional()
  @IsString()
  openaiApiKey?: string;

  constructor(init?: TritonConfigInit) {
    assignKnown(this, init, KEYS, 'TritonConfig');
  }

  /**
   * Settings from `TSTRITON_*` environment variables (`TSTRITON_HTTP_PORT=9000`,
   * `TSTRITON_LOG_LEVEL=debug`), overridden by `init`.
   */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, init?: TritonConfigInit): TritonConfig {
    const defaults = new TritonConfig();
    const fromEnv: Record<string, unknown> = {};
    for (const key of KEYS) {
      const raw = env[envName(key)];
      if (raw === undefined || raw === '') continue;
      const current = (defaults as unknown as Record<string, unknown>)[key];
      const kind = Array.isArray(current) ? 'list' : typeof current === 'undefined' ? (OPTIONAL_KINDS[key] ?? 'string') : typeof current;
      fromEnv[key] = parseEnvValue(envName(key), raw, kind);
    }
    return new TritonConfig({ ...(fromEnv as TritonConfigInit), ...stripUndefined(init ?? {}) });
  }
}

/** How the variable of a field that has no default is read; the others are strings. */
const OPTIONAL_KINDS: Partial<Record<(typeof KEYS)[number], string>> = { exitOnError: 'boolean' };

/** `httpPort` → `TSTRITON_HTTP_PORT`. */
export function envName(key: string): string {
  return `TSTRITON_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

function parseEnvValue(name: string, raw: string, kind: string): unknown {
  if (kind === 'list') return raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (kind === 'number') {
    const n = Number(raw);
    if (!Number.isFinite(n)) throw new TritonError('INVALID_CONFIG', `invalid ${name}: expected a number, got "${raw}"`);
    return n;
  }
  if (kind === 'boolean') {
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    throw new TritonError('INVALID_CONFIG', `invalid ${name}: expected true or false, got "${raw}"`);
  }
  return raw;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
