import { formatModelConfigText } from '../config/model-config-text';
import { envName, TritonConfig, type GpuExecutionProvider } from '../config/triton-config';
import { Triton, type BindOptions } from '../triton/triton';
import { usageError, type ParsedArgs } from './flags';
import { onnxBindings } from './onnx-file';

/**
 * `tstriton config model.onnx`: the `config.pbtxt` text of the model tstriton would serve from the file, as
 * `GET /v2/models/{m}/config` would answer it.
 *
 * @throws TritonError `INVALID_CONFIG` unless exactly one `.onnx` file is given, or when the file cannot be read.
 */
export async function configText(args: ParsedArgs): Promise<string> {
  if (args.positionals.length !== 1) throw usageError(`config takes one .onnx file, got ${args.positionals.length} (see tstriton config --help)`);
  const [binding] = onnxBindings(args.positionals, args.flags);
  // A server that never starts: binding derives the config without loading the model. The GPU provider comes from
  // the flag or its variable, as `serve` takes it.
  const gpu = envName('gpuExecutionProvider');
  const settings = { allowHttp: false, allowGrpc: false, allowMetrics: false, logLevel: 'silent' as const, gpuExecutionProvider: args.flags.get('gpu-execution-provider') as GpuExecutionProvider | undefined };
  const triton = new Triton(TritonConfig.fromEnv({ [gpu]: process.env[gpu] }, settings));
  try {
    return formatModelConfigText(triton.bind(binding as BindOptions).configJson);
  } finally {
    await triton.stop();
  }
}
