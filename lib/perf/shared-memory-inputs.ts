/**
 * `--shared-memory system`: each distinct request's input tensors written once into a POSIX shared-memory object
 * of their own (a file of /dev/shm), registered with the server as a system shared-memory region, so that the
 * requests carry only where their inputs lie. Outputs still come back in the answers.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { invalidConfig } from '../base/errors';
import type { CallSettings, ClientTransport } from '../client/client-transport';
import { encodeBinary } from '../tensor/binary-codec';
import type { NamedTensor } from '../tensor/named-tensor';
import type { RequestInput } from './perf-requests';

/** Where POSIX shared-memory objects live on Linux: `shm_open("/k")` is the file `/dev/shm/k`. */
const SHM_DIR = '/dev/shm';

/** The regions a run registered, and each request's inputs as references into them. */
export class SharedMemoryInputs {
  private constructor(
    private readonly names: readonly string[],
    /** Each request's inputs, in the order of the tensors given to `register`. */
    readonly inputs: readonly (readonly RequestInput[])[],
  ) {}

  /** Writes and registers one region per request of `requests`; a server that refuses is an `INVALID_CONFIG` error. */
  static async register(transport: ClientTransport, requests: readonly (readonly NamedTensor[])[], settings: CallSettings): Promise<SharedMemoryInputs> {
    const names: string[] = [];
    const inputs: RequestInput[][] = [];
    try {
      for (const [i, tensors] of requests.entries()) {
        const name = `tstriton-perf-${process.pid}-${i}`;
        const blobs = tensors.map((t) => encodeBinary(t.tensor));
        writeFileSync(join(SHM_DIR, name), Buffer.concat(blobs));
        names.push(name);
        let offset = 0;
        inputs.push(
          tensors.map((t, k) => {
            const byteSize = (blobs[k] as Uint8Array).byteLength;
            const input = { name: t.name, datatype: t.tensor.dtype, shape: t.tensor.shape, region: name, offset, byteSize };
            offset += byteSize;
            return input;
          }),
        );
        await transport.registerSystemSharedMemory(name, `/${name}`, 0, offset, settings);
      }
    } catch (err) {
      await new SharedMemoryInputs(names, []).unregister(transport, settings);
      throw invalidConfig(`--shared-memory system: ${(err as Error).message}`);
    }
    return new SharedMemoryInputs(names, inputs);
  }

  /** Unregisters the regions and removes their objects. */
  async unregister(transport: ClientTransport, settings: CallSettings): Promise<void> {
    for (const name of this.names) {
      await transport.unregisterSystemSharedMemory(name, settings).catch(() => undefined);
      rmSync(join(SHM_DIR, name), { force: true });
    }
  }
}
