import { TritonConfig } from '../config/triton-config';
import { HELP_SECTIONS, type HelpSection } from '../config/setting-spec';
import { FLAGS, flagEnv, type Command, type FlagSpec } from './flags';

const USAGE: Record<Command | 'main', string> = {
  main: [
    'Usage: tstriton <command> [flags]',
    '',
    'Commands:',
    '  serve    serve model repositories, modules and .onnx files over HTTP and gRPC (KServe v2)',
    '  config   print the config.pbtxt of an .onnx file',
    '  openapi  print the OpenAPI document of the server, or of one model (--model), without serving',
    '  perf     measure a model on a KServe v2 server, as perf_analyzer does (tstriton perf --help)',
    '  analyze  find the batching, instances and threads that serve a model best within a latency budget',
    '',
    '  tstriton serve --model-repository ./models',
    '  tstriton serve model.onnx --max-batch-size 8',
    '  tstriton serve --module ./models.ts',
    '  tstriton config model.onnx > models/model/config.pbtxt',
    '  tstriton openapi --module ./models.ts --model add_sub > add_sub.json',
    '  tstriton perf -m add_sub -u localhost:8000 --concurrency-range 1:8:7',
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
  openapi: [
    'Usage: tstriton openapi [--model name] [--module file ... | --model-repository dir ...]',
    '',
    'Prints the OpenAPI 3.1 document the server would serve at /v2/docs/dataplane.json, or with --model the one',
    'of that model (/v2/models/{name}/docs/dataplane.json), loading the models but serving nothing; for client',
    'generators such as openapi-typescript:',
    '  tstriton openapi --module ./models.ts --model add_sub > add_sub.json && npx openapi-typescript add_sub.json',
  ].join('\n'),
};

/** The title of each section of the help. */
const SECTION_TITLES: Record<HelpSection, string> = {
  serve: 'What to serve',
  onnx: 'ONNX files (serve model.onnx, config model.onnx)',
  models: 'Models',
  server: 'Server',
  http: 'HTTP',
  grpc: 'gRPC',
  metrics: 'Metrics',
  openai: 'OpenAI-compatible API',
  cache: 'Response cache and trace',
  logging: 'Logging',
};

/** The sections of the help, each with its flags, in the order listed. */
export const FLAG_SECTIONS: readonly { readonly title: string; readonly flags: readonly string[] }[] = HELP_SECTIONS.map((section) => ({
  title: SECTION_TITLES[section],
  flags: FLAGS.filter((f) => f.section === section).map((f) => f.name),
}));

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
  const sections = HELP_SECTIONS.map((section) => ({ title: SECTION_TITLES[section], flags: flags.filter((f) => f.section === section) }))
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

/** docs/cli.md's table of the flags: one row per flag, in the order of the help, with its variable, default and Triton flag. */
export function flagTable(): string {
  const defaults = new TritonConfig() as unknown as Record<string, unknown>;
  const rows = FLAGS.map((f) => {
    const env = flagEnv(f);
    return `| \`--${f.name}\`${f.repeatable ? ' (repeatable)' : ''} | ${env ? `\`${env}\`` : '—'} | ${flagDefault(f, defaults)} | ${f.triton ? `\`${f.triton}\`` : 'tstriton only'} | ${f.summary} |`;
  });
  return ['| Flag | Variable | Default | Triton flag | What it does |', '| --- | --- | --- | --- | --- |', ...rows].join('\n');
}
