/**
 * `--shared-memory system`: each distinct request's input tensors written once into a POSIX shared-memory object
 * of their own (a file of /dev/shm), and one object for each output, all registered with the server as system
 * shared-memory regions, so that the requests carry only where their inputs lie and the answers only where their
 * outputs were written. As perf_analyzer does, every request in flight shares the outputs' regions: what they hold
 * is never read, only the answers' timing counts.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { invalidConfig } from '../base/errors';
import { SHM_DIR } from '../base/shm-dir';
import type { CallSettings, ClientTransport } from '../client/client-transport';
import { encodeBinary } from '../tensor/binary-codec';
import { DTYPES, isDataType } from '../tensor/dtype';
import { elementCount } from '../tensor/tensor';
import type { NamedTensor } from '../tensor/named-tensor';
import type { OutputSpec } from './perf-inputs';
import type { RequestInput, RequestOutput } from './perf-requests';

/** perf_analyzer's `--output-shared-memory-size` default: the region of an output whose size the model does not fix. */
export const OUTPUT_SHARED_MEMORY_SIZE = 102_400;

/** The regions a run registered: each request's inputs, and the outputs, as references into them. */
export class SharedMemoryRegions {
  private constructor(
    private readonly names: readonly string[],
    /** Each request's inputs, in the order of the tensors given to `register`. */
    readonly inputs: readonly (readonly RequestInput[])[],
    /** Every output of the model, each in a region of its own. */
    readonly outputs: readonly RequestOutput[],
  ) {}

  /**
   * Writes and registers one region per request of `requests` and one per output of `outputs`, sized for a batch of
   * `batchSize` where the model's shape fixes it, else `outputBytes`; a server that refuses is an `INVALID_CONFIG`
   * error.
   */
  static async register(
    transport: ClientTransport,
    requests: readonly (readonly NamedTensor[])[],
    outputs: readonly OutputSpec[],
    sizes: { batchSize: number; outputBytes: number },
    settings: CallSettings,
  ): Promise<SharedMemoryRegions> {
    const names: string[] = [];
    const inputs: RequestInput[][] = [];
    const regionOutputs: RequestOutput[] = [];
    const region = async (name: string, bytes: Uint8Array) => {
      writeFileSync(join(SHM_DIR, name), bytes);
      names.push(name);
      await transport.registerSystemSharedMemory(name, `/${name}`, 0, bytes.byteLength, settings);
    };
    try {
      for (const [i, tensors] of requests.entries()) {
        const name = `tstriton-perf-${process.pid}-${i}`;
        const blobs = tensors.map((t) => encodeBinary(t.tensor));
        let offset = 0;
        inputs.push(
          tensors.map((t, k) => {
            const byteSize = (blobs[k] as Uint8Array).byteLength;
            const input = { name: t.name, datatype: t.tensor.dtype, shape: t.tensor.shape, region: name, offset, byteSize };
            offset += byteSize;
            return input;
          }),
        );
        await region(name, Buffer.concat(blobs));
      }
      for (const [k, output] of outputs.entries()) {
        const name = `tstriton-perf-${process.pid}-out-${k}`;
        const byteSize = outputByteSize(output, sizes.batchSize) ?? sizes.outputBytes;
        await region(name, new Uint8Array(byteSize));
        regionOutputs.push({ name: output.name, region: name, byteSize });
      }
    } catch (err) {
      await new SharedMemoryRegions(names, [], []).unregister(transport, settings);
      throw invalidConfig(`--shared-memory system: ${(err as Error).message}`);
    }
    return new SharedMemoryRegions(names, inputs, regionOutputs);
  }

  /** Unregisters the regions and removes their objects. */
  async unregister(transport: ClientTransport, settings: CallSettings): Promise<void> {
    for (const name of this.names) {
      await transport.unregisterSystemSharedMemory(name, settings).catch(() => undefined);
      rmSync(join(SHM_DIR, name), { force: true });
    }
  }
}

/** Bytes of an output for a batch of `batchSize`, when its datatype and shape fix them (not BYTES, no -1). */
export function outputByteSize(output: OutputSpec, batchSize: number): number | undefined {
  if (!isDataType(output.datatype) || output.datatype === 'BYTES' || output.shape.some((d) => d < 0)) return undefined;
  return batchSize * elementCount(output.shape) * DTYPES[output.datatype].size;
}
