import { TritonError } from '../base/errors';
import { envName, GPU_EXECUTION_PROVIDERS, LOG_FORMATS, LOG_LEVELS, MODEL_CONTROL_MODES, type TritonConfigInit } from '../config/triton-config';

/** The commands of the `tstriton` command line. */
export const COMMANDS = ['serve', 'config'] as const;
/** A command of the `tstriton` command line. */
export type Command = (typeof COMMANDS)[number];

/** How a flag's value is read: `boolean` takes `true/false/1/0`, and nothing at all means true. */
export type FlagKind = 'string' | 'integer' | 'number' | 'boolean' | 'enum';

/** One flag of the command line. */
export interface FlagSpec {
  /** The flag without its dashes: `http-port`. */
  readonly name: string;
  readonly kind: FlagKind;
  /** The values an `enum` flag takes. */
  readonly values?: readonly string[];
  /** Given more than once, the values add up (`--model-repository a --model-repository b`); otherwise the last wins. */
  readonly repeatable?: boolean;
  /** The TritonConfig field the flag sets; absent for the flags that are read by the command itself. */
  readonly field?: keyof TritonConfigInit;
  /** The environment variable that gives the same setting, when it is not the field's own `TSTRITON_*` variable. */
  readonly env?: string;
  /** The default, in words, when the flag has no field to take it from. */
  readonly default?: string;
  /** The Triton Inference Server flag this one mirrors; absent when Triton has none. */
  readonly triton?: string;
  /** The commands that take the flag. */
  readonly commands: readonly Command[];
  /** Placeholder of the value in the help. */
  readonly placeholder?: string;
  /** One line for the help. */
  readonly summary: string;
}

const SERVE: readonly Command[] = ['serve'];
const BOTH: readonly Command[] = ['serve', 'config'];

/**
 * Every flag of the command line, in the order the help lists them. Server settings map one to one onto a
 * TritonConfig field, named as Triton names the flag; the rest (the ONNX file's options, `--module`, the log
 * switches, `--cache-config`) are read by the commands.
 */
export const FLAGS: readonly FlagSpec[] = [
  // What to serve.
  { name: 'model-repository', kind: 'string', repeatable: true, field: 'modelRepository', triton: '--model-repository', commands: SERVE, placeholder: 'dir', summary: 'serve the models of a Triton-layout model repository' },
  { name: 'module', kind: 'string', repeatable: true, default: 'none', commands: SERVE, placeholder: 'file', summary: 'bind the models of a .ts/.js module: its default export (or `bind`) is called with the server' },
  { name: 'name', kind: 'string', default: 'the file name without .onnx', commands: BOTH, summary: 'model name of the .onnx file' },
  { name: 'max-batch-size', kind: 'integer', default: '4 (0 when the model cannot batch)', commands: BOTH, placeholder: 'n', summary: 'largest batch of the .onnx model' },
  { name: 'instances', kind: 'integer', default: '1', commands: BOTH, placeholder: 'n', summary: 'CPU instances (worker threads) of the .onnx model' },
  { name: 'device', kind: 'string', repeatable: true, default: 'cpu', commands: BOTH, placeholder: 'cpu|gpu:N', summary: 'one instance of the .onnx model per --device, instead of --instances' },
  { name: 'gpu-execution-provider', kind: 'enum', values: GPU_EXECUTION_PROVIDERS, field: 'gpuExecutionProvider', commands: BOTH, summary: 'what the GPU instances of ONNX models run on: auto (CUDA when its libraries load, else WebGPU), cuda or webgpu (gpu:0 only)' },
  // Model control.
  { name: 'model-control-mode', kind: 'enum', values: MODEL_CONTROL_MODES, field: 'modelControlMode', triton: '--model-control-mode', commands: SERVE, summary: 'none: load everything at start; explicit: load/unload API; poll: follow the repositories' },
  { name: 'load-model', kind: 'string', repeatable: true, field: 'loadModel', triton: '--load-model', commands: SERVE, placeholder: 'name', summary: 'with explicit model control, a repository model to load at start (* for all)' },
  { name: 'repository-poll-secs', kind: 'number', field: 'repositoryPollSeconds', triton: '--repository-poll-secs', commands: SERVE, placeholder: 'seconds', summary: 'how often poll model control reads the repositories again' },
  { name: 'disable-auto-complete-config', kind: 'boolean', field: 'disableAutoCompleteConfig', triton: '--disable-auto-complete-config', commands: SERVE, summary: 'require a complete config.pbtxt for every repository model; nothing is completed from the ONNX model' },
  { name: 'strict-model-config', kind: 'boolean', field: 'strictModelConfig', triton: '--strict-model-config', commands: SERVE, summary: 'deprecated (as in Triton): the older name of --disable-auto-complete-config' },
  { name: 'backend-config', kind: 'string', repeatable: true, field: 'backendConfig', triton: '--backend-config', commands: SERVE, placeholder: 'backend,key=value', summary: 'onnxruntime,default-max-batch-size=N: the max_batch_size of auto-completed ONNX models that can batch (TSTRITON_* joins several with ;)' },
  { name: 'model-load-thread-count', kind: 'integer', field: 'modelLoadThreadCount', triton: '--model-load-thread-count', commands: SERVE, placeholder: 'n', summary: 'how many models load at once at start' },
  { name: 'exit-on-error', kind: 'boolean', field: 'exitOnError', default: 'true', triton: '--exit-on-error', commands: SERVE, summary: 'a model that fails to load at start stops the start (exit 1); false: serve the others, not ready' },
  { name: 'strict-readiness', kind: 'boolean', field: 'strictReadiness', triton: '--strict-readiness', commands: SERVE, summary: 'server readiness also requires every model to be ready' },
  { name: 'exit-timeout-secs', kind: 'number', field: 'exitTimeoutSeconds', triton: '--exit-timeout-secs', commands: SERVE, placeholder: 'seconds', summary: 'how long a stop waits for in-flight requests' },
  // Endpoints.
  { name: 'allow-http', kind: 'boolean', field: 'allowHttp', triton: '--allow-http', commands: SERVE, summary: 'serve HTTP' },
  { name: 'http-address', kind: 'string', field: 'httpAddress', triton: '--http-address', commands: SERVE, placeholder: 'address', summary: 'HTTP listen address' },
  { name: 'http-port', kind: 'integer', field: 'httpPort', triton: '--http-port', commands: SERVE, placeholder: 'port', summary: 'HTTP port; 0 picks a free one (the "serving" log line names it)' },
  { name: 'http-thread-count', kind: 'integer', field: 'httpThreadCount', triton: '--http-thread-count', commands: SERVE, placeholder: 'n', summary: 'front-end threads serving the HTTP, gRPC and OpenAI ports; 0 (default) one per core beyond the core thread, at most 8' },
  { name: 'allow-grpc', kind: 'boolean', field: 'allowGrpc', triton: '--allow-grpc', commands: SERVE, summary: 'serve gRPC' },
  { name: 'grpc-address', kind: 'string', field: 'grpcAddress', triton: '--grpc-address', commands: SERVE, placeholder: 'address', summary: 'gRPC listen address' },
  { name: 'grpc-port', kind: 'integer', field: 'grpcPort', triton: '--grpc-port', commands: SERVE, placeholder: 'port', summary: 'gRPC port; 0 picks a free one' },
  { name: 'allow-metrics', kind: 'boolean', field: 'allowMetrics', triton: '--allow-metrics', commands: SERVE, summary: 'serve Prometheus metrics' },
  { name: 'metrics-address', kind: 'string', field: 'metricsAddress', triton: '--metrics-address', commands: SERVE, placeholder: 'address', summary: 'metrics listen address' },
  { name: 'metrics-port', kind: 'integer', field: 'metricsPort', triton: '--metrics-port', commands: SERVE, placeholder: 'port', summary: 'metrics port; 0 picks a free one' },
  { name: 'metrics-config', kind: 'string', repeatable: true, field: 'metricsConfig', triton: '--metrics-config', commands: SERVE, placeholder: 'key=value', summary: 'summary_latencies=true, summary_quantiles=q:e,..., histogram_latencies=true, counter_latencies=false (TSTRITON_* joins several with ;)' },
  { name: 'metrics-interval-ms', kind: 'integer', field: 'metricsIntervalMs', triton: '--metrics-interval-ms', commands: SERVE, placeholder: 'ms', summary: 'how often CPU and GPU metrics are sampled again, at most' },
  { name: 'allow-cpu-metrics', kind: 'boolean', field: 'allowCpuMetrics', triton: '--allow-cpu-metrics', commands: SERVE, summary: 'serve nv_cpu_* metrics (Linux)' },
  { name: 'allow-gpu-metrics', kind: 'boolean', field: 'allowGpuMetrics', triton: '--allow-gpu-metrics', commands: SERVE, summary: 'serve nv_gpu_* metrics when nvidia-smi lists a GPU' },
  { name: 'nvidia-smi-path', kind: 'string', field: 'nvidiaSmiPath', commands: SERVE, placeholder: 'file', summary: 'the nvidia-smi the GPU metrics run' },
  { name: 'http-restricted-api', kind: 'string', repeatable: true, field: 'httpRestrictedApi', triton: '--http-restricted-api', commands: SERVE, placeholder: 'apis:key=value', summary: 'requests to these APIs need the header key=value (TSTRITON_* joins several with ;)' },
  { name: 'grpc-restricted-protocol', kind: 'string', repeatable: true, field: 'grpcRestrictedProtocol', triton: '--grpc-restricted-protocol', commands: SERVE, placeholder: 'protocols:key=value', summary: 'calls to these protocols need the metadata triton-grpc-protocol-key=value' },
  { name: 'http-header-forward-pattern', kind: 'string', field: 'httpHeaderForwardPattern', triton: '--http-header-forward-pattern', commands: SERVE, placeholder: 'regex', summary: 'HTTP headers matching it reach the model as parameters' },
  { name: 'grpc-header-forward-pattern', kind: 'string', field: 'grpcHeaderForwardPattern', triton: '--grpc-header-forward-pattern', commands: SERVE, placeholder: 'regex', summary: 'gRPC metadata matching it reaches the model as parameters' },
  { name: 'http-max-input-size', kind: 'integer', field: 'httpMaxInputSize', triton: '--http-max-input-size', commands: SERVE, placeholder: 'bytes', summary: 'largest HTTP request body, after decompression' },
  { name: 'json-max-depth', kind: 'integer', field: 'jsonMaxDepth', commands: SERVE, placeholder: 'n', summary: 'deepest JSON nesting accepted in a request' },
  { name: 'grpc-max-message-size', kind: 'integer', field: 'grpcMaxMessageSize', commands: SERVE, placeholder: 'bytes', summary: 'largest gRPC message, received or sent; -1 for no limit' },
  { name: 'grpc-flow-control-window', kind: 'integer', field: 'grpcFlowControlWindow', commands: SERVE, placeholder: 'bytes', summary: 'HTTP/2 flow-control window of each gRPC call' },
  { name: 'request-buffer-pool-byte-size', kind: 'integer', field: 'requestBufferPoolByteSize', commands: SERVE, placeholder: 'bytes', summary: 'memory kept for reuse by requests of 1 MiB or more; 0 for none' },
  { name: 'incremental-marking-soft-trigger', kind: 'integer', field: 'incrementalMarkingSoftTrigger', commands: SERVE, placeholder: 'percent', summary: "V8 starts marking for a full collection once this much of the heap's room is used; 0 for V8's rule" },
  { name: 'incremental-marking-hard-trigger', kind: 'integer', field: 'incrementalMarkingHardTrigger', commands: SERVE, placeholder: 'percent', summary: "past this much, V8 starts marking at once; 0 for V8's rule" },
  { name: 'allow-shared-memory', kind: 'boolean', field: 'allowSharedMemory', commands: SERVE, summary: 'let clients register system shared-memory regions' },
  { name: 'server-version', kind: 'string', field: 'serverVersion', default: 'the package version', commands: SERVE, placeholder: 'version', summary: 'version reported by server metadata' },
  // OpenAI-compatible API.
  { name: 'openai', kind: 'boolean', field: 'openai', commands: SERVE, summary: 'serve the OpenAI-compatible API (/v1/models, /v1/completions, /v1/chat/completions, /v1/embeddings) on the HTTP port' },
  { name: 'openai-port', kind: 'integer', field: 'openaiPort', commands: SERVE, placeholder: 'port', summary: 'with --openai, also serve it on a port of its own; 0 picks a free one, -1 none' },
  { name: 'openai-api-key', kind: 'string', field: 'openaiApiKey', commands: SERVE, placeholder: 'key', summary: 'with --openai, its requests need Authorization: Bearer <key> (the api_key of OpenAI clients)' },
  // TLS.
  { name: 'grpc-use-ssl', kind: 'boolean', field: 'grpcUseSsl', triton: '--grpc-use-ssl', commands: SERVE, summary: 'serve gRPC over TLS' },
  { name: 'grpc-use-ssl-mutual', kind: 'boolean', field: 'grpcUseSslMutual', triton: '--grpc-use-ssl-mutual', commands: SERVE, summary: 'also require gRPC client certificates' },
  { name: 'grpc-server-cert', kind: 'string', field: 'grpcServerCert', triton: '--grpc-server-cert', commands: SERVE, placeholder: 'pem', summary: 'gRPC server certificate (chain)' },
  { name: 'grpc-server-key', kind: 'string', field: 'grpcServerKey', triton: '--grpc-server-key', commands: SERVE, placeholder: 'pem', summary: 'gRPC server private key' },
  { name: 'grpc-root-cert', kind: 'string', field: 'grpcRootCert', triton: '--grpc-root-cert', commands: SERVE, placeholder: 'pem', summary: 'CA of the gRPC client certificates' },
  { name: 'http-use-ssl', kind: 'boolean', field: 'httpUseSsl', commands: SERVE, summary: 'serve HTTPS' },
  { name: 'http-use-ssl-mutual', kind: 'boolean', field: 'httpUseSslMutual', commands: SERVE, summary: 'also require HTTPS client certificates' },
  { name: 'http-server-cert', kind: 'string', field: 'httpServerCert', commands: SERVE, placeholder: 'pem', summary: 'HTTPS server certificate (chain)' },
  { name: 'http-server-key', kind: 'string', field: 'httpServerKey', commands: SERVE, placeholder: 'pem', summary: 'HTTPS server private key' },
  { name: 'http-root-cert', kind: 'string', field: 'httpRootCert', commands: SERVE, placeholder: 'pem', summary: 'CA of the HTTPS client certificates' },
  // Cache and trace.
  { name: 'response-cache-byte-size', kind: 'integer', field: 'responseCacheByteSize', triton: '--response-cache-byte-size', commands: SERVE, placeholder: 'bytes', summary: 'size of the response cache of the models that enable it; 0: no cache' },
  { name: 'cache-config', kind: 'string', env: envName('responseCacheByteSize'), default: 'none', triton: '--cache-config', commands: SERVE, placeholder: 'local,size=N', summary: 'Triton\'s form of --response-cache-byte-size' },
  { name: 'trace-file', kind: 'string', field: 'traceFile', triton: '--trace-file', commands: SERVE, placeholder: 'file', summary: 'where the trace extension writes traces' },
  { name: 'trace-config', kind: 'string', repeatable: true, field: 'traceConfig', triton: '--trace-config', commands: SERVE, placeholder: '[mode,]key=value', summary: 'trace settings: mode=opentelemetry, level=TIMESTAMPS, rate=N, opentelemetry,url=..., ... (TSTRITON_* joins several with ;)' },
  // Logging.
  { name: 'log-level', kind: 'enum', values: LOG_LEVELS, field: 'logLevel', commands: SERVE, summary: 'the least severe log lines written' },
  { name: 'log-format', kind: 'enum', values: LOG_FORMATS, field: 'logFormat', default: 'default on a terminal, else json', triton: '--log-format', commands: SERVE, summary: "Triton's plain lines (default, ISO8601) or JSON lines (json)" },
  { name: 'log-verbose', kind: 'integer', env: envName('logLevel'), default: '0', triton: '--log-verbose', commands: SERVE, placeholder: 'n', summary: 'above 0: debug lines, one per request (log level debug)' },
  { name: 'log-info', kind: 'boolean', env: envName('logLevel'), default: 'true', triton: '--log-info', commands: SERVE, summary: 'write info lines' },
  { name: 'log-warning', kind: 'boolean', env: envName('logLevel'), default: 'true', triton: '--log-warning', commands: SERVE, summary: 'write warnings' },
  { name: 'log-error', kind: 'boolean', env: envName('logLevel'), default: 'true', triton: '--log-error', commands: SERVE, summary: 'write errors' },
];

/** A flag's value as parsed: a list for a repeatable flag. */
export type FlagValue = string | number | boolean | string[];

/** The command line, parsed. */
export interface ParsedArgs {
  /** The command; `undefined` with `--help` or `--version` alone. */
  readonly command: Command | undefined;
  readonly help: boolean;
  readonly version: boolean;
  /** The flags given, by name. */
  readonly flags: ReadonlyMap<string, FlagValue>;
  /** The arguments that are not flags: the .onnx files. */
  readonly positionals: readonly string[];
}

const BY_NAME = new Map(FLAGS.map((f) => [f.name, f]));

/** A usage error: one line, prefixed `tstriton: ` by the entry point. */
export function usageError(message: string): TritonError {
  return new TritonError('INVALID_CONFIG', message);
}

/**
 * Parses the arguments after `tstriton`: a command, then flags (`--flag value` or `--flag=value`) and positionals
 * in any order; `--` ends the flags.
 *
 * @throws TritonError `INVALID_CONFIG` naming the unknown command or flag, or the value that does not parse.
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const flags = new Map<string, FlagValue>();
  const positionals: string[] = [];
  let command: Command | undefined;
  let help = false;
  let version = false;
  let flagsEnded = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (flagsEnded || !arg.startsWith('-') || arg === '-') {
      if (command === undefined && positionals.length === 0 && !flagsEnded) {
        if (arg === 'help') help = true;
        else if (!(COMMANDS as readonly string[]).includes(arg)) throw usageError(`unknown command "${arg}" (see tstriton --help)`);
        else command = arg as Command;
        continue;
      }
      positionals.push(arg);
      continue;
    }
    if (arg === '--') {
      flagsEnded = true;
      continue;
    }
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    if (arg === '--version') {
      version = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = (eq < 0 ? arg : arg.slice(0, eq)).replace(/^--?/, '');
    const spec = BY_NAME.get(name);
    if (!spec || !arg.startsWith('--')) throw usageError(`unknown flag ${eq < 0 ? arg : arg.slice(0, eq)} (see tstriton --help)`);
    if (command !== undefined && !spec.commands.includes(command)) {
      throw usageError(`--${name} is not a flag of tstriton ${command} (see tstriton ${command} --help)`);
    }
    let raw: string | undefined;
    if (eq >= 0) raw = arg.slice(eq + 1);
    else if (spec.kind === 'boolean') {
      // A bare boolean flag means true; it takes the next argument only when that is a boolean.
      if (i + 1 < argv.length && BOOLEAN_WORDS.has((argv[i + 1] as string).toLowerCase())) raw = argv[++i];
    } else if (i + 1 < argv.length && !(argv[i + 1] as string).startsWith('--')) raw = argv[++i];
    const value = readValue(spec, raw);
    if (spec.repeatable) {
      const list = (flags.get(name) as string[] | undefined) ?? [];
      list.push(value as string);
      flags.set(name, list);
    } else flags.set(name, value);
  }
  if (command !== undefined) {
    for (const name of flags.keys()) {
      if (!(BY_NAME.get(name) as FlagSpec).commands.includes(command)) throw usageError(`--${name} is not a flag of tstriton ${command} (see tstriton ${command} --help)`);
    }
  }
  return { command, help, version, flags, positionals };
}

const TRUE_WORDS = new Set(['true', '1']);
const BOOLEAN_WORDS = new Set([...TRUE_WORDS, 'false', '0']);

/** The value of one flag, read as its kind says. */
function readValue(spec: FlagSpec, raw: string | undefined): FlagValue {
  const flag = `--${spec.name}`;
  if (spec.kind === 'boolean') {
    if (raw === undefined) return true;
    if (!BOOLEAN_WORDS.has(raw.toLowerCase())) throw usageError(`${flag} expects true or false, got "${raw}"`);
    return TRUE_WORDS.has(raw.toLowerCase());
  }
  const expected = spec.kind === 'integer' ? 'an integer' : spec.kind === 'number' ? 'a number' : spec.kind === 'enum' ? `one of ${(spec.values ?? []).join(', ')}` : 'a value';
  if (raw === undefined) throw usageError(`${flag} expects ${expected}, got nothing`);
  switch (spec.kind) {
    case 'integer':
      if (!/^[-+]?\d+$/.test(raw.trim())) throw usageError(`${flag} expects ${expected}, got "${raw}"`);
      return Number(raw);
    case 'number': {
      const n = raw.trim() === '' ? NaN : Number(raw);
      if (!Number.isFinite(n)) throw usageError(`${flag} expects ${expected}, got "${raw}"`);
      return n;
    }
    case 'enum':
      if (!(spec.values ?? []).includes(raw)) throw usageError(`${flag} expects ${expected}, got "${raw}"`);
      return raw;
    default:
      if (raw === '' && spec.repeatable) throw usageError(`${flag} expects ${expected}, got ""`);
      return raw;
  }
}

/** The environment variable that gives a flag's setting, if any. */
export function flagEnv(spec: FlagSpec): string | undefined {
  return spec.env ?? (spec.field && envName(spec.field));
}
