#!/usr/bin/env node
import { TritonError } from '../base/errors';
import { capMallocArenas } from '../base/malloc-arenas';
import { VERSION } from '../base/version';
import { parseArgs, type ParsedArgs } from './flags';
import { helpText, usageText } from './help';

/** Exit code of a command line that cannot run as given (a bad flag or value, nothing to serve), as getopt tools use. */
export const USAGE_EXIT_CODE = 2;

/**
 * The commands with flags of their own, read by their own parsers rather than the server settings' table, each
 * loaded only when asked for: `perf` (perf_analyzer's -m, -u, -i, ...) and `analyze` (with its plotting libraries).
 */
const OWN_FLAGS: Readonly<Record<string, () => Promise<(argv: readonly string[]) => Promise<number>>>> = {
  perf: async () => (await import('../perf/perf-command')).perf,
  analyze: async () => (await import('../analyze/analyze-command')).analyzeCommand,
};

/**
 * The `tstriton` command line: parses `argv` (the arguments after `tstriton`), runs the command and resolves with
 * the exit code. A failure is one line on stderr, `tstriton: <what was wrong>`.
 */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const ownFlags = argv[0] !== undefined && Object.hasOwn(OWN_FLAGS, argv[0]) ? OWN_FLAGS[argv[0]] : undefined;
  if (ownFlags !== undefined) {
    try {
      return await (await ownFlags())(argv.slice(1));
    } catch (err) {
      return fail(err);
    }
  }
  let args: ParsedArgs;
  try {
    args = parseArgs(argv);
  } catch (err) {
    return fail(err);
  }
  if (args.version) {
    process.stdout.write(`tstriton ${VERSION}\n`);
    return 0;
  }
  if (args.help) {
    process.stdout.write(helpText(args.command));
    return 0;
  }
  try {
    switch (args.command) {
      case undefined:
        // No command: the usage, on stderr since nothing ran, and the usage code (as a command line that cannot run).
        process.stderr.write(usageText());
        return USAGE_EXIT_CODE;
      case 'config': {
        // Loaded on demand, so that --help and bad flags answer without loading the server.
        const { configText } = await import('./config-command');
        process.stdout.write(await configText(args));
        return 0;
      }
      case 'openapi': {
        const { openapiText } = await import('./openapi-command');
        process.stdout.write(await openapiText(args, env));
        return 0;
      }
      case 'serve': {
        const { serve } = await import('./serve');
        return await serve(args, env);
      }
    }
  } catch (err) {
    return fail(err);
  }
}

/** Writes the one line of a failure; a configuration problem exits with the usage code, anything else with 1. */
function fail(err: unknown): number {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`tstriton: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
  return err instanceof TritonError && err.code === 'INVALID_CONFIG' ? USAGE_EXIT_CODE : 1;
}

if (require.main === module) {
  // A server starts under glibc's arena cap (docs/threads.md#malloc-arenas): the restart comes before anything runs.
  if (process.argv[2] === 'serve') capMallocArenas();
  // Exit explicitly: a server's worker threads and sockets may outlive serve() by a moment.
  void main(process.argv.slice(2)).then((code) => process.exit(code));
}
