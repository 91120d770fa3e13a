import { Triton } from '../triton/triton';
import { bindModule } from './bind-module';
import { usageError, type ParsedArgs } from './flags';
import { onnxBindings } from './onnx-file';
import { serverConfig } from './server-config';

/**
 * `tstriton serve`: the server's settings from the `TSTRITON_*` variables and the flags, the models of the
 * repositories (loaded by the server as it starts), of each `--module` and of each `.onnx` file; then serves until
 * SIGINT or SIGTERM and resolves with the exit code. A start that fails (a port in use, a model that does not load
 * while `exitOnError` holds) resolves with the code the server logged it stopped with (1), the reason on stderr.
 *
 * @throws TritonError `INVALID_CONFIG` when there is nothing to serve or a setting is invalid, before anything listens.
 */
export async function serve(args: ParsedArgs, env: NodeJS.ProcessEnv): Promise<number> {
  const config = serverConfig(args.flags, env);
  const modules = (args.flags.get('module') as string[] | undefined) ?? [];
  if (config.modelRepository.length === 0 && modules.length === 0 && args.positionals.length === 0) {
    throw usageError('nothing to serve: give --model-repository, --module or an .onnx file (see tstriton serve --help)');
  }
  const onnx = onnxBindings(args.positionals, args.flags);
  const triton = new Triton(config);
  try {
    for (const binding of onnx) triton.bind(binding);
    for (const file of modules) await bindModule(triton, file);
  } catch (err) {
    // Nothing listens yet; the stop closes what the bindings made.
    await triton.stop();
    throw err;
  }
  try {
    return await triton.serve();
  } catch (err) {
    // A start that failed has logged why and stopped with its exit code; one that never began is a usage error.
    const code = await triton.stop();
    if (code === 0) throw err;
    process.stderr.write(`tstriton: ${(err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ')}\n`);
    return code;
  }
}
