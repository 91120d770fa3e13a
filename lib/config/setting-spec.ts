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

/** The sections of `tstriton --help`, in the order it lists them; every flag is listed in one. */
export const HELP_SECTIONS = ['serve', 'onnx', 'models', 'server', 'http', 'grpc', 'metrics', 'openai', 'cache', 'logging'] as const;
/** A section of `tstriton --help`. */
export type HelpSection = (typeof HELP_SECTIONS)[number];

/** What every setting states besides its value: how the command line, `--help` and docs/cli.md show it. */
interface SettingPresentation {
  /** The `--help` section that lists the setting's flag. */
  readonly section: HelpSection;
  /** The flag's one line in `--help` and in docs/cli.md's table. */
  readonly help: string;
  /** tritonserver's flag for the setting: `true` when it is the same flag, its name where it differs; false: none. */
  readonly triton: boolean | `--${string}`;
  /** The flag without its dashes, where it is not the field's name in kebab case (`httpPort` → `http-port`). */
  readonly flag?: string;
  /** The value's placeholder in `--help` (`<port>`); the type's name when absent. Booleans and enums show their values. */
  readonly placeholder?: string;
  /** The default in words, where the value does not tell it (no default, or one that `tstriton serve` sets). */
  readonly defaultText?: string;
  /** `tstriton config` takes the flag as well as `tstriton serve`. */
  readonly configCommand?: true;
}

/**
 * One server setting: the type of its value (which also says how its flag and its variable are read), its default
 * (`undefined`: the field is optional and unset by default) and its bounds. A `list` is repeatable on the command
 * line and comma-separated in its variable; a `repeatable` string joins its repeated flags with `;`.
 */
export type SettingSpec = SettingPresentation &
  (
    | { readonly type: 'integer' | 'number'; readonly default: number | undefined; readonly min?: number; readonly max?: number }
    | { readonly type: 'boolean'; readonly default: boolean | undefined }
    | { readonly type: 'string'; readonly default: string | undefined; readonly repeatable?: true }
    | { readonly type: 'list'; readonly default: readonly string[] }
    | { readonly type: 'enum'; readonly values: readonly string[]; readonly default: string | undefined }
  );

/** The type of a setting's value on `TritonConfig`. */
export type SettingValue<S> = S extends { type: 'integer' | 'number' }
  ? number
  : S extends { type: 'boolean' }
    ? boolean
    : S extends { type: 'list' }
      ? string[]
      : S extends { values: readonly (infer V)[] }
        ? V
        : string;

/** The type of a setting's value in `TritonConfigInit`: a list may be read-only there. */
export type SettingInitValue<S> = S extends { type: 'list' } ? readonly string[] : SettingValue<S>;

/** `httpPort` → `TSTRITON_HTTP_PORT`. */
export function envName(key: string): string {
  return `TSTRITON_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

/** The flag of a setting, without its dashes: `httpPort` → `http-port`, unless the setting names its own. */
export function flagName(key: string, spec: Pick<SettingSpec, 'flag'>): string {
  return spec.flag ?? key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
