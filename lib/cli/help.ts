import { TritonConfig } from '../config/triton-config';
import { FLAGS, flagEnv, type Command, type FlagSpec } from './flags';

const USAGE: Record<Command | 'main', string> = {
  main: [
    'Usage: tstriton <command> [flags]',
    '',
    'Commands:',
    '  serve    serve model repositories, modules and .onnx files over HTTP and gRPC (KServe v2)',
    '  config   print the config.pbtxt of an .onnx file',
    '',
    '  tstriton serve --model-repository ./models',
    '  tstriton serve model.onnx --max-batch-size 8',
    '  tstriton serve --module ./models.ts',
    '  tstriton config model.onnx > models/model/config.pbtxt',
    '',
    'Every server flag can also come from its TSTRITON_* variable; a flag wins over the variable.',
    'Run `tstriton --help` for every flag, by section, or `tstriton <command> --help` for the flags of a command.',
    '`tstriton --version` prints the version.',
  ].join('\n'),
  serve: [
    'Usage: tstriton serve [model.onnx ...] [--model-repository dir ...] [--module file ...] [flags]',
    '',
    'Serves every model given, as tritonserver does, until SIGINT or SIGTERM. Each .onnx file is served as one',
    'model; --name, --max-batch-size, --instances and --device apply to it.',
  ].join('\n'),
  config: [
    'Usage: tstriton config model.onnx [--name name] [--max-batch-size n] [--instances n | --device d ...]',
    '',
    'Prints the config.pbtxt tstriton derives for an .onnx file, to start a model repository from it:',
    '  tstriton config model.onnx > models/model/config.pbtxt',
  ].join('\n'),
};

/** The sections of the help, each with its flags, in the order listed; a flag in none is listed under "Other". */
export const FLAG_SECTIONS: readonly { readonly title: string; readonly flags: readonly string[] }[] = [
  { title: 'What to serve', flags: ['model-repository', 'module'] },
  { title: 'ONNX files (serve model.onnx, config model.onnx)', flags: ['name', 'max-batch-size', 'instances', 'device', 'gpu-execution-provider'] },
  {
    title: 'Models',
    flags: ['model-control-mode', 'load-model', 'repository-poll-secs', 'disable-auto-complete-config', 'strict-model-config', 'backend-config', 'model-load-thread-count'],
  },
  {
    title: 'Server',
    flags: ['exit-on-error', 'strict-readiness', 'exit-timeout-secs', 'server-version', 'allow-shared-memory', 'request-buffer-pool-byte-size', 'incremental-marking-soft-trigger', 'incremental-marking-hard-trigger'],
  },
  {
    title: 'HTTP',
    flags: ['allow-http', 'http-address', 'http-port', 'http-thread-count', 'http-restricted-api', 'http-header-forward-pattern', 'http-max-input-size', 'json-max-depth', 'http-use-ssl', 'http-use-ssl-mutual', 'http-server-cert', 'http-server-key', 'http-root-cert'],
  },
  {
    title: 'gRPC',
    flags: ['allow-grpc', 'grpc-address', 'grpc-port', 'grpc-restricted-protocol', 'grpc-header-forward-pattern', 'grpc-max-message-size', 'grpc-flow-control-window', 'grpc-use-ssl', 'grpc-use-ssl-mutual', 'grpc-server-cert', 'grpc-server-key', 'grpc-root-cert'],
  },
  { title: 'Metrics', flags: ['allow-metrics', 'metrics-address', 'metrics-port', 'metrics-config', 'metrics-interval-ms', 'allow-cpu-metrics', 'allow-gpu-metrics', 'nvidia-smi-path'] },
  { title: 'OpenAI-compatible API', flags: ['openai', 'openai-port', 'openai-api-key'] },
  { title: 'Response cache and trace', flags: ['response-cache-byte-size', 'cache-config', 'trace-file', 'trace-config'] },
  { title: 'Logging', flags: ['log-level', 'log-format', 'log-verbose', 'log-info', 'log-warning', 'log-error'] },
];

/** What a bare `tstriton` prints: the commands and examples, and where the flags are. */
export function usageText(): string {
  return `${USAGE.main}\n`;
}

/**
 * The help of a command, or of the command line when `command` is undefined: its flags in sections (what to
 * serve, models, server, HTTP, gRPC, metrics, ..., logging), each with its variable, default and Triton flag.
 */
export function helpText(command: Command | undefined): string {
  const flags = command === undefined ? FLAGS : FLAGS.filter((f) => f.commands.includes(command));
  const defaults = new TritonConfig() as unknown as Record<string, unknown>;
  const width = 36;
  const indent = `  ${' '.repeat(width)}`;
  // A long flag takes a line of its own rather than pushing every summary to the right.
  const rows = (list: readonly FlagSpec[]) =>
    list.flatMap((f) => {
      const [usage, summary, details] = [flagUsage(f), f.summary, describe(f, defaults)];
      return usage.length < width ? [`  ${usage.padEnd(width)}${summary}`, `${indent}${details}`] : [`  ${usage}`, `${indent}${summary}`, `${indent}${details}`];
    });
  const listed = new Set(FLAG_SECTIONS.flatMap((s) => s.flags));
  const sections = [...FLAG_SECTIONS, { title: 'Other', flags: flags.filter((f) => !listed.has(f.name)).map((f) => f.name) }]
    .map((section) => ({ title: section.title, flags: section.flags.map((name) => flags.find((f) => f.name === name)).filter((f): f is FlagSpec => f !== undefined) }))
    .filter((section) => section.flags.length > 0)
    .map((section) => `${section.title}:\n${rows(section.flags).join('\n')}`);
  return `${USAGE[command ?? 'main']}\n\n${sections.join('\n\n')}\n\n  ${'--help'.padEnd(width)}this help\n`;
}

/** `--http-port <port>`; a repeatable flag is marked with `...`. */
export function flagUsage(f: FlagSpec): string {
  const placeholder = f.kind === 'boolean' ? '[true|false]' : f.kind === 'enum' ? (f.values ?? []).join('|') : `<${f.placeholder ?? f.kind}>`;
  return `--${f.name} ${placeholder}${f.repeatable ? ' ...' : ''}`;
}

/** The default of a flag, in words. */
export function flagDefault(f: FlagSpec, defaults: Record<string, unknown> = new TritonConfig() as unknown as Record<string, unknown>): string {
  if (f.default !== undefined) return f.default;
  const value = f.field === undefined ? undefined : defaults[f.field];
  if (value === undefined) return 'none';
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.join(',');
  return String(value);
}

function describe(f: FlagSpec, defaults: Record<string, unknown>): string {
  return [flagEnv(f) ?? 'no variable', `default ${flagDefault(f, defaults)}`, f.triton ? `Triton ${f.triton}` : 'tstriton only'].join(' · ');
}
