import { GPU_EXECUTION_PROVIDERS, LOG_FORMATS, LOG_LEVELS, MODEL_CONTROL_MODES, type SettingInitValue, type SettingSpec, type SettingValue } from './setting-spec';

/**
 * Every server setting, declared once: its type, default, bounds, `--help` section, flag and help line; each
 * entry's TSDoc is the field's. `TritonConfig`'s fields and their validation, `TritonConfigInit`, the `TSTRITON_*`
 * variables, the command line's flags, `--help` and docs/cli.md's table all come from here, so a setting is added
 * by adding its entry. Within a `--help` section, flags are listed in this order.
 */
export const SERVER_SETTINGS = {
  // What to serve.
  /**
   * Triton's `--model-repository` (repeatable): folders in Triton's layout (`<model>/config.pbtxt`,
   * `<model>/<version>/model.onnx`) served beside the bound models. `TSTRITON_MODEL_REPOSITORY` takes a
   * comma-separated list.
   */
  modelRepository: { type: 'list', default: [],
    section: 'serve', triton: true, placeholder: 'dir', help: 'serve the models of a Triton-layout model repository' },

  // ONNX files.
  /**
   * The execution provider of the ONNX models' GPU instances (`gpu:N`, `instance_group { kind: KIND_GPU }`):
   * `auto` (the default) takes onnxruntime's CUDA provider when its libraries load (CUDA 12, cuDNN 9 and
   * onnxruntime-node's CUDA provider files), else its bundled WebGPU provider (Dawn over Vulkan: the Vulkan and
   * GL loaders and the NVIDIA driver's Vulkan ICD); `cuda` or `webgpu` takes that one only. A model's own
   * `gpu_execution_accelerator` (or `onnxModel({ gpuExecutionProvider })`) wins. WebGPU runs on the first GPU
   * only: it refuses `gpu:N` with N > 0 (docs/onnx.md#gpus).
   */
  gpuExecutionProvider: { type: 'enum', values: GPU_EXECUTION_PROVIDERS, default: 'auto',
    section: 'onnx', triton: false, configCommand: true, help: 'what the GPU instances of ONNX models run on: auto (CUDA when its libraries load, else WebGPU), cuda or webgpu (gpu:0 only)' },

  // Models.
  /**
   * Triton's `--model-control-mode`: `none` (the default) loads every bound model at start and refuses the
   * repository load/unload APIs; `explicit` serves them.
   */
  modelControlMode: { type: 'enum', values: MODEL_CONTROL_MODES, default: 'none',
    section: 'models', triton: true, help: 'none: load everything at start; explicit: load/unload API; poll: follow the repositories' },
  /**
   * Triton's `--load-model` (repeatable): with `explicit` model control, the repository models loaded at start
   * (`*` for all); the others stay unloaded until a load request. Comma-separated in `TSTRITON_LOAD_MODEL`.
   */
  loadModel: { type: 'list', default: [],
    section: 'models', triton: true, placeholder: 'name', help: 'with explicit model control, a repository model to load at start (* for all)' },
  /** Triton's `--repository-poll-secs`: how often `poll` model control reads the repositories again. */
  repositoryPollSeconds: { type: 'number', default: 15, min: 0.01,
    section: 'models', triton: true, flag: 'repository-poll-secs', placeholder: 'seconds', help: 'how often poll model control reads the repositories again' },
  /**
   * Triton's `--disable-auto-complete-config`: every repository model needs a complete `config.pbtxt`
   * (`max_batch_size`, `input` and `output` for an ONNX model); nothing is read from the ONNX model to complete
   * it. `strictModelConfig` is its older name, and either turns it on.
   */
  disableAutoCompleteConfig: { type: 'boolean', default: false,
    section: 'models', triton: true, help: 'require a complete config.pbtxt for every repository model; nothing is completed from the ONNX model' },
  /**
   * Triton's `--strict-model-config`, the older name of `disableAutoCompleteConfig` (deprecated there too): when
   * true, every repository model needs a complete `config.pbtxt`; when false (the default, as Triton's), what is
   * missing is completed from the ONNX model's signature.
   */
  strictModelConfig: { type: 'boolean', default: false,
    section: 'models', triton: true, help: 'deprecated (as in Triton): the older name of --disable-auto-complete-config' },
  /**
   * Triton's `--backend-config` settings, entries joined with `;`: `onnxruntime,default-max-batch-size=N` (or
   * `default-max-batch-size=N` for every backend) is the `max_batch_size` auto-complete gives an ONNX model that
   * can batch and whose config does not say (4 when unset, as Triton's; 0 leaves such models without a batch
   * dimension). See docs/repository.md.
   */
  backendConfig: { type: 'string', default: undefined, repeatable: true,
    section: 'models', triton: true, placeholder: 'backend,key=value', help: 'onnxruntime,default-max-batch-size=N: the max_batch_size of auto-completed ONNX models that can batch (TSTRITON_* joins several with ;)' },
  /** Triton's `--model-load-thread-count`: how many models load at once while the server starts. */
  modelLoadThreadCount: { type: 'integer', default: 4, min: 1, max: 1024,
    section: 'models', triton: true, placeholder: 'n', help: 'how many models load at once at start' },

  // Server.
  /**
   * Triton's `--exit-on-error`: whether a model that fails to load while the server starts stops the start.
   * `true`: `run()` stops the server and rejects, naming the model and why (`tstriton serve`'s default, as
   * tritonserver's). `false`: the server serves the models that loaded; the others are listed with their reason
   * and keep the server not ready under `strictReadiness`. Unset (the default of `new Triton()`): repository
   * models as with `false`, a model bound in code as with `true`.
   */
  exitOnError: { type: 'boolean', default: undefined,
    section: 'server', triton: true, defaultText: 'true', help: 'a model that fails to load at start stops the start (exit 1); false: serve the others, not ready' },
  /** Server readiness also requires every model to be ready. */
  strictReadiness: { type: 'boolean', default: true,
    section: 'server', triton: true, help: 'server readiness also requires every model to be ready' },
  /** How long stop() waits for in-flight requests before it forces the close. */
  exitTimeoutSeconds: { type: 'number', default: 30, min: 0,
    section: 'server', triton: true, flag: 'exit-timeout-secs', placeholder: 'seconds', help: 'how long a stop waits for in-flight requests' },
  /** Version reported by server metadata. */
  serverVersion: { type: 'string', default: undefined,
    section: 'server', triton: false, placeholder: 'version', defaultText: 'the package version', help: 'version reported by server metadata' },
  /**
   * Lets clients register system shared-memory regions and pass tensors through them (Triton's
   * `--allow-client-shm`). Off by default: a client that may register a region can read and write any POSIX
   * shared-memory object the server's user can open.
   */
  allowSharedMemory: { type: 'boolean', default: false,
    section: 'server', triton: false, help: 'let clients register system shared-memory regions' },
  /**
   * Bytes of memory kept for reuse by request messages of 1 MiB or more (gRPC ModelInfer and HTTP bodies with binary tensors):
   * such a request is received into a buffer from this pool, given back once its response is sent, so large
   * tensors do not make work for the garbage collector. A request's input tensors are then valid until its
   * response is sent (copy one to keep it longer). 0 turns the pool off: every message gets a buffer of its own.
   */
  requestBufferPoolByteSize: { type: 'integer', default: 64 * 1024 * 1024, min: 0,
    section: 'server', triton: false, placeholder: 'bytes', help: 'memory kept for reuse by requests of 1 MiB or more; 0 for none' },
  /**
   * When V8 starts marking the heap for a full garbage collection, in percent of the room left below the limit it
   * set at the last one: from a task past the soft trigger, at once past the hard one. Process-wide (V8's
   * `--incremental-marking-soft-trigger` and `--incremental-marking-hard-trigger`, set when the server starts; a
   * value given to node on its command line wins). V8's own rule, which weighs the room against its young
   * generation (16 MB), started marking within milliseconds of each full collection on a small heap taking in
   * large tensors, so the server marked without pause. The limit stays V8's. 0 leaves V8's rule.
   */
  incrementalMarkingSoftTrigger: { type: 'integer', default: 80, min: 0, max: 100,
    section: 'server', triton: false, placeholder: 'percent', help: "V8 starts marking for a full collection once this much of the heap's room is used; 0 for V8's rule" },
  /** See `incrementalMarkingSoftTrigger`. */
  incrementalMarkingHardTrigger: { type: 'integer', default: 95, min: 0, max: 100,
    section: 'server', triton: false, placeholder: 'percent', help: "past this much, V8 starts marking at once; 0 for V8's rule" },
  /**
   * A thread of the server (the core thread, each front-end thread) that has been quiet for ten seconds with its
   * heap grown this many MB since its last full garbage collection runs one, which gives back to the system what a
   * burst of requests left. V8 would keep it: an idle thread's memory reducer finds the allocation rate high for as
   * long as it idles and collects only on its watchdog, 100 s after the last full collection, so RSS stays at the
   * burst's peak and the next burst climbs higher (docs/threads.md, "Memory"). A steady load never goes quiet and
   * is never paused for it. 0 leaves it to V8.
   */
  idleCollectionMegabytes: { type: 'integer', default: 16, min: 0,
    section: 'server', triton: false, placeholder: 'MB', help: 'a thread quiet for 10 s with its heap grown this much since its last full collection runs one; 0 leaves it to V8' },

  // Response cache and trace.
  /**
   * Size in bytes of the response cache shared by the models that enable `responseCache` (Triton's
   * `--cache-config local,size=N`); 0 means no cache.
   */
  responseCacheByteSize: { type: 'integer', default: 0, min: 0,
    section: 'cache', triton: true, placeholder: 'bytes', help: 'size of the response cache of the models that enable it; 0: no cache' },
  /** Where the trace extension writes traces (Triton's `--trace-file`); tracing needs it. */
  traceFile: { type: 'string', default: undefined,
    section: 'cache', triton: true, placeholder: 'file', help: 'where the trace extension writes traces' },
  /**
   * Triton's `--trace-config` settings (the flag given several times, entries joined with `;`): `mode=opentelemetry`,
   * `level=TIMESTAMPS`, `rate=N`, `count=N`, and the OpenTelemetry exporter's `opentelemetry,url=<OTLP/HTTP URL>`,
   * `opentelemetry,resource=<key>=<value>`, `opentelemetry,bsp_max_queue_size=N`, `bsp_schedule_delay=ms`,
   * `bsp_max_export_batch_size=N` (docs/trace.md).
   */
  traceConfig: { type: 'string', default: undefined, repeatable: true,
    section: 'cache', triton: true, placeholder: '[mode,]key=value', help: 'trace settings: mode=opentelemetry, level=TIMESTAMPS, rate=N, opentelemetry,url=..., ... (TSTRITON_* joins several with ;)' },

  // Logging.
  /** The least severe log lines written: `silent`, `error`, `warn`, `info` or `debug`. */
  logLevel: { type: 'enum', values: LOG_LEVELS, default: 'info',
    section: 'logging', triton: false, help: 'the least severe log lines written' },
  /**
   * Triton's `--log-format`: `default` or `ISO8601` plain lines, or `json` lines; `json` when unset.
   * `tstriton serve` sets it, when neither its flag nor its variable does, to `default` when stdout is a terminal
   * and `json` otherwise (a pipe, a file, a container's log).
   */
  logFormat: { type: 'enum', values: LOG_FORMATS, default: undefined,
    section: 'logging', triton: true, defaultText: 'default on a terminal, else json', help: "Triton's plain lines (default, ISO8601) or JSON lines (json)" },

  // HTTP.
  /** Serve the KServe v2 HTTP/REST endpoint. */
  allowHttp: { type: 'boolean', default: true,
    section: 'http', triton: true, help: 'serve HTTP' },
  /** The address the HTTP endpoint listens on. */
  httpAddress: { type: 'string', default: '0.0.0.0',
    section: 'http', triton: true, placeholder: 'address', help: 'HTTP listen address' },
  /** HTTP port; 0 picks a free one. */
  httpPort: { type: 'integer', default: 8000, min: 0, max: 65535,
    section: 'http', triton: true, placeholder: 'port', help: 'HTTP port; 0 picks a free one (the "serving" log line names it)' },
  /**
   * Front-end threads (Triton's `--http-thread-count`): each accepts connections on the HTTP, gRPC and OpenAI
   * ports and parses, decodes, encodes and writes requests, in front of the one core thread that batches and runs
   * them. 0 (the default) picks one thread per core beyond the core thread's own, at most 8; 1 serves every port
   * on the core thread itself. See docs/threads.md.
   */
  httpThreadCount: { type: 'integer', default: 0, min: 0, max: 64,
    section: 'http', triton: true, placeholder: 'n', help: 'front-end threads serving the HTTP, gRPC and OpenAI ports; 0 (default) one per core beyond the core thread, at most 8' },
  /**
   * The young generation of each front-end thread's heap, in MB (V8 counts three semi-spaces: two for the
   * scavenger, one for new large objects). A front-end thread's objects live for one request, so a small young
   * generation costs it little; V8 in Node 24 grows every heap's semi-spaces up to 64 MB under load and keeps them,
   * 192 MB a thread after a burst (docs/threads.md, "Memory"). 48, the default, is Node 20's size; bench:cores
   * measured the same CPU per request with it as with V8's. 0 leaves it to V8, as does `--max-semi-space-size`
   * given to node.
   */
  httpThreadYoungGenerationMegabytes: { type: 'integer', default: 48, min: 0,
    section: 'http', triton: false, placeholder: 'MB', help: "young generation of each front-end thread's heap; 0 leaves it to V8" },
  /**
   * Triton's `--http-restricted-api`: `<api>[,<api>...]:<header>=<value>`, several separated by `;`. Requests to
   * an API in a restricted group need the header with that value; others get 403.
   */
  httpRestrictedApi: { type: 'string', default: undefined, repeatable: true,
    section: 'http', triton: true, placeholder: 'apis:key=value', help: 'requests to these APIs need the header key=value (TSTRITON_* joins several with ;)' },
  /** HTTP headers whose names match this regular expression reach the callable as string parameters. */
  httpHeaderForwardPattern: { type: 'string', default: undefined,
    section: 'http', triton: true, placeholder: 'regex', help: 'HTTP headers matching it reach the model as parameters' },
  /** Largest HTTP request body in bytes, counted after decompression (Triton: 64 MiB). */
  httpMaxInputSize: { type: 'integer', default: 64 * 1024 * 1024, min: 1,
    section: 'http', triton: true, placeholder: 'bytes', help: 'largest HTTP request body, after decompression' },
  /** Deepest JSON nesting accepted in a request (Triton: 100). */
  jsonMaxDepth: { type: 'integer', default: 100, min: 1,
    section: 'http', triton: false, placeholder: 'n', help: 'deepest JSON nesting accepted in a request' },
  /**
   * Serve the OpenAPI documents of the HTTP API and of each model, and their interactive reference page, at
   * MLServer's paths: `/v2/docs`, `/v2/docs/dataplane.json`, `/v2/models/{m}/docs[/dataplane.json]`
   * (docs/openapi.md). Off, every docs path answers 404.
   */
  openapiDocs: { type: 'boolean', default: true,
    section: 'http', triton: false, help: 'serve the OpenAPI documents and the API reference page at /v2/docs and /v2/models/{m}/docs' },
  /** Serve HTTP over TLS (HTTPS) with `httpServerCert` and `httpServerKey`; Triton needs a proxy for this. */
  httpUseSsl: { type: 'boolean', default: false,
    section: 'http', triton: false, help: 'serve HTTPS' },
  /** Also require HTTPS client certificates signed by `httpRootCert`. */
  httpUseSslMutual: { type: 'boolean', default: false,
    section: 'http', triton: false, help: 'also require HTTPS client certificates' },
  /** PEM file of the HTTPS server certificate (chain). */
  httpServerCert: { type: 'string', default: undefined,
    section: 'http', triton: false, placeholder: 'pem', help: 'HTTPS server certificate (chain)' },
  /** PEM file of the HTTPS server private key. */
  httpServerKey: { type: 'string', default: undefined,
    section: 'http', triton: false, placeholder: 'pem', help: 'HTTPS server private key' },
  /** PEM file of the CA that signs HTTPS client certificates, for mutual TLS. */
  httpRootCert: { type: 'string', default: undefined,
    section: 'http', triton: false, placeholder: 'pem', help: 'CA of the HTTPS client certificates' },

  // gRPC.
  /** Serve the KServe v2 gRPC endpoint. */
  allowGrpc: { type: 'boolean', default: true,
    section: 'grpc', triton: true, help: 'serve gRPC' },
  /** The address the gRPC endpoint listens on. */
  grpcAddress: { type: 'string', default: '0.0.0.0',
    section: 'grpc', triton: true, placeholder: 'address', help: 'gRPC listen address' },
  /** gRPC port; 0 picks a free one. */
  grpcPort: { type: 'integer', default: 8001, min: 0, max: 65535,
    section: 'grpc', triton: true, placeholder: 'port', help: 'gRPC port; 0 picks a free one' },
  /**
   * Triton's `--grpc-restricted-protocol`, same syntax; the client sends metadata `triton-grpc-protocol-<header>`,
   * and a call without it gets UNAVAILABLE.
   */
  grpcRestrictedProtocol: { type: 'string', default: undefined, repeatable: true,
    section: 'grpc', triton: true, placeholder: 'protocols:key=value', help: 'calls to these protocols need the metadata triton-grpc-protocol-key=value' },
  /** gRPC metadata keys matching this regular expression reach the callable as string parameters. */
  grpcHeaderForwardPattern: { type: 'string', default: undefined,
    section: 'grpc', triton: true, placeholder: 'regex', help: 'gRPC metadata matching it reaches the model as parameters' },
  /**
   * Largest gRPC message in bytes, received or sent; a compressed request is measured after decompression.
   * -1 means unlimited (Triton's behaviour), which lets one small compressed message take gigabytes.
   */
  grpcMaxMessageSize: { type: 'integer', default: 64 * 1024 * 1024, min: -1,
    section: 'grpc', triton: false, placeholder: 'bytes', help: 'largest gRPC message, received or sent; -1 for no limit' },
  /**
   * HTTP/2 flow-control window of each gRPC call, in bytes: how much of a request a client may send before it
   * must wait for the server to acknowledge; the connection's window is four times this. HTTP/2's default,
   * 64 KiB, costs a round trip per 64 KiB of a large tensor.
   */
  grpcFlowControlWindow: { type: 'integer', default: 8 * 1024 * 1024, min: 65_535, max: 2 ** 31 - 1,
    section: 'grpc', triton: false, placeholder: 'bytes', help: 'HTTP/2 flow-control window of each gRPC call' },
  /** Serve gRPC over TLS with `grpcServerCert` and `grpcServerKey` (Triton's `--grpc-use-ssl`). */
  grpcUseSsl: { type: 'boolean', default: false,
    section: 'grpc', triton: true, help: 'serve gRPC over TLS' },
  /** Also require client certificates signed by `grpcRootCert` (Triton's `--grpc-use-ssl-mutual`). */
  grpcUseSslMutual: { type: 'boolean', default: false,
    section: 'grpc', triton: true, help: 'also require gRPC client certificates' },
  /** PEM file of the gRPC server certificate (chain). */
  grpcServerCert: { type: 'string', default: undefined,
    section: 'grpc', triton: true, placeholder: 'pem', help: 'gRPC server certificate (chain)' },
  /** PEM file of the gRPC server private key. */
  grpcServerKey: { type: 'string', default: undefined,
    section: 'grpc', triton: true, placeholder: 'pem', help: 'gRPC server private key' },
  /** PEM file of the CA that signs client certificates, for mutual TLS. */
  grpcRootCert: { type: 'string', default: undefined,
    section: 'grpc', triton: true, placeholder: 'pem', help: 'CA of the gRPC client certificates' },

  // Metrics.
  /** Serve Prometheus metrics. */
  allowMetrics: { type: 'boolean', default: true,
    section: 'metrics', triton: true, help: 'serve Prometheus metrics' },
  /** The address the metrics endpoint listens on. */
  metricsAddress: { type: 'string', default: '0.0.0.0',
    section: 'metrics', triton: true, placeholder: 'address', help: 'metrics listen address' },
  /** Metrics port; 0 picks a free one. */
  metricsPort: { type: 'integer', default: 8002, min: 0, max: 65535,
    section: 'metrics', triton: true, placeholder: 'port', help: 'metrics port; 0 picks a free one' },
  /**
   * Triton's `--metrics-config` settings, entries joined with `;`: `summary_latencies=true`,
   * `summary_quantiles=0.5:0.05,0.99:0.001`, `histogram_latencies=true`, `counter_latencies=false`
   * (docs/statistics.md).
   */
  metricsConfig: { type: 'string', default: undefined, repeatable: true,
    section: 'metrics', triton: true, placeholder: 'key=value', help: 'summary_latencies=true, summary_quantiles=q:e,..., histogram_latencies=true, counter_latencies=false (TSTRITON_* joins several with ;)' },
  /** Triton's `--metrics-interval-ms`: how often CPU and GPU metrics are sampled again (at most, when scraped). */
  metricsIntervalMs: { type: 'integer', default: 2000, min: 1,
    section: 'metrics', triton: true, placeholder: 'ms', help: 'how often CPU and GPU metrics are sampled again, at most' },
  /** Triton's `--allow-cpu-metrics`: `nv_cpu_utilization` and `nv_cpu_memory_*` (Linux). */
  allowCpuMetrics: { type: 'boolean', default: true,
    section: 'metrics', triton: true, help: 'serve nv_cpu_* metrics (Linux)' },
  /** Triton's `--allow-gpu-metrics`: `nv_gpu_*` per GPU, read with nvidia-smi when a GPU is present. */
  allowGpuMetrics: { type: 'boolean', default: true,
    section: 'metrics', triton: true, help: 'serve nv_gpu_* metrics when nvidia-smi lists a GPU' },
  /** The nvidia-smi the GPU metrics run (a name on the PATH, or a path). */
  nvidiaSmiPath: { type: 'string', default: 'nvidia-smi',
    section: 'metrics', triton: false, placeholder: 'file', help: 'the nvidia-smi the GPU metrics run' },

  // OpenAI-compatible API.
  /** Serve the OpenAI-compatible API (`/v1/chat/completions`, ...) on the HTTP port (docs/openai.md). */
  openai: { type: 'boolean', default: false,
    section: 'openai', triton: false, help: 'serve the OpenAI-compatible API (/v1/models, /v1/completions, /v1/chat/completions, /v1/embeddings) on the HTTP port' },
  /** With `openai`, also serve the OpenAI-compatible API on this port of its own (0 picks one); -1: none. */
  openaiPort: { type: 'integer', default: -1, min: -1, max: 65535,
    section: 'openai', triton: false, placeholder: 'port', help: 'with --openai, also serve it on a port of its own; 0 picks a free one, -1 none' },
  /** With `openai`, every `/v1` request needs `Authorization: Bearer <openaiApiKey>`, as OpenAI clients send it. */
  openaiApiKey: { type: 'string', default: undefined,
    section: 'openai', triton: false, placeholder: 'key', help: 'with --openai, its requests need Authorization: Bearer <key> (the api_key of OpenAI clients)' },
} satisfies Record<string, SettingSpec>;

/** The table's type. */
export type ServerSettings = typeof SERVER_SETTINGS;
/** The name of a server setting: a field of `TritonConfig`. */
export type SettingKey = keyof ServerSettings;
/** Every setting's name, in the table's order. */
export const SETTING_KEYS = Object.keys(SERVER_SETTINGS) as SettingKey[];

type Values = { -readonly [K in SettingKey]: SettingValue<ServerSettings[K]> };
/** The settings without a default: optional fields, unset until given. */
type OptionalKey = { [K in SettingKey]: ServerSettings[K]['default'] extends undefined ? K : never }[SettingKey];

/** `TritonConfig`'s fields: one per setting, optional where the setting has no default. */
export type SettingValues = Omit<Values, OptionalKey> & Partial<Pick<Values, OptionalKey>>;

/** Plain-object form of TritonConfig: any of its settings. */
export type TritonConfigInit = { [K in SettingKey]?: SettingInitValue<ServerSettings[K]> };
