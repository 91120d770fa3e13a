import { TritonError } from '../base/errors';
import { SERVER_SETTINGS, SETTING_KEYS, type SettingKey } from '../config/server-settings';
import { envName, flagName, HELP_SECTIONS, type HelpSection, type SettingSpec } from '../config/setting-spec';

/** The commands of the `tstriton` command line. */
export const COMMANDS = ['serve', 'config', 'openapi'] as const;
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
  readonly field?: SettingKey;
  /** The environment variable that gives the same setting, when it is not the field's own `TSTRITON_*` variable. */
  readonly env?: string;
  /** The default, in words, when the flag has no field to take it from. */
  readonly default?: string;
  /** The Triton Inference Server flag this one mirrors; absent when Triton has none. */
  readonly triton?: string;
  /** The commands that take the flag. */
  readonly commands: readonly Command[];
  /** The `--help` section that lists the flag. */
  readonly section: HelpSection;
  /** Placeholder of the value in the help. */
  readonly placeholder?: string;
  /** One line for the help. */
  readonly summary: string;
}

const SERVE: readonly Command[] = ['serve'];
const BOTH: readonly Command[] = ['serve', 'config'];
/** `tstriton openapi` describes what `serve` would serve: it takes these flags of `serve` too. */
const OPENAPI_TAKES: ReadonlySet<string> = new Set(['module', 'model-repository', 'http-restricted-api', 'openai', 'openai-api-key']);

/** A flag that the commands read themselves, with the `--help` section that lists it. */
interface CommandFlag extends Omit<FlagSpec, 'field'> {
  /** Listed before the section's server settings rather than after them. */
  readonly first?: true;
}

/**
 * The flags that are no server setting: the ONNX file's options, `--module`, the log switches and `--cache-config`,
 * read by the commands. The server settings' flags come from `SERVER_SETTINGS`.
 */
const COMMAND_FLAGS: readonly CommandFlag[] = [
  { name: 'module', kind: 'string', repeatable: true, default: 'none', commands: SERVE, section: 'serve', placeholder: 'file', summary: 'bind the models of a .ts/.js module: its default export (or `bind`) is called with the server' },
  { name: 'model', kind: 'string', default: "none: the server's document", commands: ['openapi'], section: 'serve', placeholder: 'name', summary: "openapi: print this model's OpenAPI document rather than the server's" },
  { name: 'name', kind: 'string', default: 'the file name without .onnx', commands: BOTH, section: 'onnx', first: true, summary: 'model name of the .onnx file' },
  { name: 'max-batch-size', kind: 'integer', default: '4 (0 when the model cannot batch)', commands: BOTH, section: 'onnx', first: true, placeholder: 'n', summary: 'largest batch of the .onnx model' },
  { name: 'instances', kind: 'integer', default: '1', commands: BOTH, section: 'onnx', first: true, placeholder: 'n', summary: 'CPU instances (worker threads) of the .onnx model' },
  { name: 'device', kind: 'string', repeatable: true, default: 'cpu', commands: BOTH, section: 'onnx', first: true, placeholder: 'cpu|gpu:N', summary: 'one instance of the .onnx model per --device, instead of --instances' },
  { name: 'cache-config', kind: 'string', env: envName('responseCacheByteSize'), default: 'none', triton: '--cache-config', commands: SERVE, section: 'cache', placeholder: 'local,size=N', summary: "Triton's form of --response-cache-byte-size" },
  { name: 'log-verbose', kind: 'integer', env: envName('logLevel'), default: '0', triton: '--log-verbose', commands: SERVE, section: 'logging', placeholder: 'n', summary: 'above 0: debug lines, one per request (log level debug)' },
  { name: 'log-info', kind: 'boolean', env: envName('logLevel'), default: 'true', triton: '--log-info', commands: SERVE, section: 'logging', summary: 'write info lines' },
  { name: 'log-warning', kind: 'boolean', env: envName('logLevel'), default: 'true', triton: '--log-warning', commands: SERVE, section: 'logging', summary: 'write warnings' },
  { name: 'log-error', kind: 'boolean', env: envName('logLevel'), default: 'true', triton: '--log-error', commands: SERVE, section: 'logging', summary: 'write errors' },
];

/** The flag of a server setting, as its entry in `SERVER_SETTINGS` describes it. */
function settingFlag(field: SettingKey, setting: SettingSpec): FlagSpec {
  const name = flagName(field, setting);
  return {
    name,
    kind: setting.type === 'list' ? 'string' : setting.type,
    ...(setting.type === 'enum' && { values: setting.values }),
    ...((setting.type === 'list' || (setting.type === 'string' && setting.repeatable)) && { repeatable: true }),
    field,
    ...(setting.defaultText !== undefined && { default: setting.defaultText }),
    ...(setting.triton !== false && { triton: setting.triton === true ? `--${name}` : setting.triton }),
    commands: setting.configCommand ? BOTH : SERVE,
    section: setting.section,
    ...(setting.placeholder !== undefined && { placeholder: setting.placeholder }),
    summary: setting.help,
  };
}

/**
 * Every flag of the command line, in the order the help lists them: by section, and within one the commands' own
 * flags marked `first`, the server settings' flags (one per TritonConfig field, named as Triton names the flag),
 * then the commands' other flags.
 */
export const FLAGS: readonly FlagSpec[] = HELP_SECTIONS.flatMap((section) => {
  const own = COMMAND_FLAGS.filter((f) => f.section === section);
  const settings = SETTING_KEYS.filter((key) => SERVER_SETTINGS[key].section === section).map((key) => settingFlag(key, SERVER_SETTINGS[key]));
  const strip = ({ first: _first, ...flag }: CommandFlag): FlagSpec => withOpenApi(flag);
  return [...own.filter((f) => f.first).map(strip), ...settings.map(withOpenApi), ...own.filter((f) => !f.first).map(strip)];
});

/** A flag, with `openapi` among its commands when that command takes it too. */
function withOpenApi(flag: FlagSpec): FlagSpec {
  return OPENAPI_TAKES.has(flag.name) && !flag.commands.includes('openapi') ? { ...flag, commands: [...flag.commands, 'openapi'] } : flag;
}

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
