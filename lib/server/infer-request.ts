import { TritonError, invalidArgument } from '../base/errors';
import type { ModelView } from '../model/model-view';
import { decodeBinary } from '../tensor/binary-codec';
import { classify, type Classification } from '../tensor/classification';
import type { DataType, TensorData } from '../tensor/dtype';
import type { Tensor } from '../tensor/tensor';
import { describeValue } from '../tensor/wire-value';
import { classificationOf } from './extensions';
import { shmTargetOf, type SharedMemoryManager, type ShmTarget } from './shared-memory';

/**
 * What an infer request means apart from its wire format, for both transports: where each input's data comes from
 * when it is not in the message, and how each output goes back. The HTTP and gRPC codecs only parse and encode
 * around it; the core entry (infer-entry.ts) finds the model.
 */

/** The data of an input that names a shared-memory region instead of carrying its bytes. */
export function sharedMemoryInput(dtype: DataType, shape: readonly number[], shm: ShmTarget, sharedMemory: SharedMemoryManager | undefined, what: string): TensorData {
  if (!sharedMemory) throw new TritonError('NOT_FOUND', `Unable to find system shared memory region: '${shm.region}'`);
  return decodeBinary(dtype, shape, sharedMemory.read(shm, what), what);
}

/** How one requested output goes back, as its parameters asked; the same for HTTP and gRPC. */
export interface OutputHandling {
  readonly name: string;
  /** In the binary tensor extension (HTTP's `binary_data`; gRPC outputs are always raw bytes). */
  readonly binary: boolean;
  /** Written to this shared-memory window and answered without data. */
  readonly shm?: ShmTarget;
  /** Answered as its top classes (the classification extension). */
  readonly classes?: Classification;
}

/** An output's parameters, as each transport reads them off its wire. */
export interface OutputParameters {
  readonly region?: unknown;
  readonly byteSize?: unknown;
  readonly offset?: unknown;
  readonly classification?: unknown;
  readonly binary?: unknown;
}

/**
 * Checks and resolves how output `name` goes back. A bad combination, or a region that is not registered,
 * fails the request before it runs.
 */
export function outputHandling(model: ModelView, name: string, p: OutputParameters, sharedMemory: SharedMemoryManager | undefined, what: string): OutputHandling {
  const shm = shmTargetOf(p.region, p.byteSize, p.offset, what);
  const classes = classificationOf(p.classification, model, name);
  if (classes && shm) throw invalidArgument(`${what}: 'classification' cannot be combined with 'shared_memory_region'`);
  const binary = p.binary ?? false;
  if (typeof binary !== 'boolean') throw invalidArgument(`${what}: 'binary_data' must be a boolean, got ${describeValue(binary)}`);
  if (shm && binary) throw invalidArgument(`${what}: 'binary_data' cannot be combined with 'shared_memory_region'`);
  if (shm) {
    if (!sharedMemory) throw new TritonError('NOT_FOUND', `Unable to find system shared memory region: '${shm.region}'`);
    sharedMemory.status(shm.region); // throws for a region that is not registered
    return { name, binary, shm };
  }
  return classes ? { name, binary, classes } : { name, binary };
}

/**
 * The tensor an output goes back as: its top classes when asked for, or undefined once written to the
 * shared-memory window it was bound to.
 */
export function outputTensor(produced: Tensor, how: OutputHandling | undefined, sharedMemory: SharedMemoryManager | undefined, encode: (t: Tensor) => Uint8Array): Tensor | undefined {
  if (!how) return produced;
  const tensor = how.classes ? classify(produced, how.name, how.classes) : produced;
  if (how.shm && sharedMemory) {
    sharedMemory.write(how.shm, encode(tensor), how.name);
    return undefined;
  }
  return tensor;
}
