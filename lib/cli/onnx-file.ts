import * as path from 'node:path';
import { parseDevice } from '../instances/instance';
import { onnxModel } from '../onnx/onnx-model';
import type { BindOptions } from '../triton/triton';
import { usageError, type FlagValue } from './flags';

/**
 * The bindings of the `.onnx` files named on the command line, one model each: named by `--name` (one file only)
 * or the file's name without `.onnx`, with `--max-batch-size`, and `--instances` CPU instances or one per `--device`.
 * Each file's signature is read here, so that a missing or broken file is reported before a server exists.
 *
 * @throws TritonError `INVALID_CONFIG` for a file that is not `.onnx` or cannot be read, or options that do not fit together.
 */
export function onnxBindings(files: readonly string[], flags: ReadonlyMap<string, FlagValue>): BindOptions[] {
  for (const file of files) {
    if (!/\.onnx$/i.test(file)) throw usageError(`expected an .onnx file, got "${file}" (a repository is given with --model-repository, a module with --module)`);
  }
  if (files.length === 0 && ['name', 'max-batch-size', 'instances', 'device'].some((f) => flags.has(f))) {
    throw usageError('--name, --max-batch-size, --instances and --device apply to an .onnx file, and none was given');
  }
  const name = flags.get('name') as string | undefined;
  if (name !== undefined && files.length !== 1) throw usageError(`--name names one .onnx file; ${files.length} were given`);
  const devices = onnxDevices(flags);
  const maxBatchSize = flags.get('max-batch-size') as number | undefined;
  return files.map((file) => ({ modelName: name ?? path.basename(file).replace(/\.onnx$/i, ''), inferFunc: onnxModel({ path: file, maxBatchSize, devices }) }));
}

/** `--device`s as given, or `--instances` times `cpu`. */
function onnxDevices(flags: ReadonlyMap<string, FlagValue>): string[] {
  const devices = flags.get('device') as string[] | undefined;
  const instances = flags.get('instances') as number | undefined;
  if (devices !== undefined && instances !== undefined) throw usageError('--instances and --device both set the instances; give one');
  if (devices !== undefined) {
    for (const d of devices) {
      try {
        parseDevice(d);
      } catch {
        throw usageError(`--device expects cpu, gpu or gpu:N, got "${d}"`);
      }
    }
    return devices;
  }
  if (instances !== undefined && instances < 1) throw usageError(`--instances expects at least 1, got ${instances}`);
  return Array<string>(instances ?? 1).fill('cpu');
}
