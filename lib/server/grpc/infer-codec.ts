import type { Cancellation } from '../../base/cancellation';
import type { RequestMemory } from '../../tensor/buffer-pool';
import { toTritonError, invalidArgument } from '../../base/errors';
import type { InferenceRequest, InferenceResponse, NamedTensor } from '../../model/inference';
import type { ModelView } from '../../model/model-view';
import { decodeBinary, encodeBinary } from '../../tensor/binary-codec';
import { DTYPES, isDataType } from '../../tensor/dtype';
import { parseParameters, type RequestParameters } from '../parameters';
import { fromInferParameters, toInferParameters } from '../../protocol/infer-parameter';
import type { InferParameterMap, ModelInferRequestMessage, ModelInferResponseMessage } from '../../protocol/messages';
import { decodeTensorContents } from '../../protocol/tensor-contents';
import { decodeModelInferRequest } from './infer-request-decoder';
import { shmTargetOf, type SharedMemoryManager, type ShmTarget } from '../shared-memory';
import { outputHandling, outputTensor, sharedMemoryInput, type OutputHandling } from '../infer-request';

/** `triton_*` request parameters gRPC clients may send (perf_analyzer sends this one on every request). */
export const GRPC_ALLOWED_TRITON_KEYS: ReadonlySet<string> = new Set(['triton_enable_empty_final_response']);

/**
 * Parses the bytes of a received ModelInferRequest; a malformed message is INVALID_ARGUMENT. The infer RPCs
 * receive their messages as bytes and parse them in their handlers rather than in grpc-js's deserializer: there a
 * throw ends the call at once with INTERNAL, which on a stream drops the answers still owed to the requests
 * before the bad message.
 */
export function parseModelInferRequest(bytes: Buffer, memory?: ArrayBuffer): ModelInferRequestMessage {
  try {
    return decodeModelInferRequest(bytes, memory);
  } catch (err) {
    throw toTritonError(err, 'INVALID_ARGUMENT');
  }
}

/**
 * Decodes a ModelInferRequest for `model`. Each input takes its data from its typed `contents` when set,
 * otherwise from the next `raw_input_contents` entry, which numeric inputs view without copying when the
 * bytes are aligned.
 */
export function decodeGrpcInfer(
  msg: ModelInferRequestMessage,
  model: ModelView,
  cancellation: Cancellation,
  deadline?: number,
  sharedMemory?: SharedMemoryManager,
  memory?: RequestMemory,
): InferenceRequest {
  const { parameters, priority, timeoutMicroseconds, sequence } = isEmpty(msg.parameters)
    ? NO_PARAMETERS
    : parseParameters(fromInferParameters(msg.parameters, 'request'), 'request', GRPC_ALLOWED_TRITON_KEYS);
  const raw = msg.raw_input_contents ?? [];
  const align = new RawAligner(msg.movableBuffer);
  let rawIndex = 0;
  const inputs: NamedTensor[] = msg.inputs.map((input) => {
    const name = input.name;
    const what = `input '${name}' for model '${model.name}'`;
    const dtype = input.datatype;
    if (!isDataType(dtype)) throw invalidArgument(`${what}: unknown datatype ${JSON.stringify(dtype)}`);
    const shape = new Array<number>(input.shape.length);
    for (let i = 0; i < shape.length; i++) {
      const d = Number(input.shape[i]);
      if (!Number.isSafeInteger(d) || d < 0) throw invalidArgument(`${what}: 'shape' must hold non-negative integers, got [${input.shape.join(',')}]`);
      shape[i] = d;
    }
    const shm = isEmpty(input.parameters) ? undefined : shmTargetIn(input.parameters, what);
    if (shm) return { name, tensor: { dtype, shape, data: sharedMemoryInput(dtype, shape, shm, sharedMemory, what) } };
    if (input.contents) {
      if (raw.length > 0) {
        throw invalidArgument(`contents field must not be specified when using raw_input_contents for '${name}' for model '${model.name}'`);
      }
      return { name, tensor: { dtype, shape, data: decodeTensorContents(dtype, shape, input.contents, what) } };
    }
    const bytes = raw[rawIndex++];
    if (bytes === undefined) throw invalidArgument(`unable to find data for input tensor '${name}' for model '${model.name}' in request.`);
    return { name, tensor: { dtype, shape, data: decodeBinary(dtype, shape, align.next(bytes, DTYPES[dtype].size), what) } };
  });
  if (rawIndex < raw.length) {
    throw invalidArgument(`unexpected additional input data for model '${model.name}': ${raw.length} raw_input_contents for ${rawIndex} raw inputs`);
  }
  const outputs = msg.outputs ?? [];
  return {
    modelName: model.name,
    modelVersion: model.version,
    id: msg.id ?? '',
    inputs,
    requestedOutputs: outputs.length > 0 ? outputs.map((o) => o.name) : undefined,
    parameters,
    priority,
    timeoutMicroseconds,
    ...(sequence && { sequence }),
    cancellation,
    deadline,
    movableBuffer: msg.movableBuffer,
    memory,
  };
}

const NO_PARAMETERS: RequestParameters = { parameters: {}, binaryDataOutput: false };

function isEmpty(map: InferParameterMap | undefined): boolean {
  if (!map) return true;
  for (const _ in map) return false;
  return true;
}

/**
 * Puts each `raw_input_contents` entry where a typed array of its element size can view it, in the order the
 * entries lie in the message.
 *
 * An aligned entry stays as it is. A misaligned one in a message that owns its buffer (`movableBuffer`: only
 * the raw entries still view it once it is decoded) moves back, in place, over the tag and length bytes in front
 * of it and any room the entry before it left by moving: a 4 MB tensor then costs a memmove rather than a new
 * 4 MB buffer for the garbage collector to reclaim. Otherwise it is copied once into Node's buffer pool, whose
 * slices are 8-byte aligned.
 */
class RawAligner {
  private readonly whole: Uint8Array | undefined;
  /** Where the previous entry's bytes ended before and after it moved. */
  private lastEnd = -1;
  private lastPlacedEnd = -1;

  constructor(owned: ArrayBufferLike | undefined) {
    this.whole = owned && new Uint8Array(owned);
  }

  next(bytes: Uint8Array, size: number): Uint8Array {
    const placed = this.place(bytes, size);
    this.lastEnd = bytes.byteOffset + bytes.byteLength;
    this.lastPlacedEnd = placed.byteOffset + placed.byteLength;
    return placed;
  }

  private place(bytes: Uint8Array, size: number): Uint8Array {
    const offset = bytes.byteOffset;
    if (size <= 1 || offset % size === 0) return bytes;
    if (this.whole && bytes.buffer === this.whole.buffer) {
      // The field's tag (one byte for field 7) and its length, as a minimal varint; a longer encoding only
      // leaves this estimate short, which is safe.
      const fieldStart = offset - 1 - varintLength(bytes.byteLength);
      const lowest = fieldStart === this.lastEnd ? this.lastPlacedEnd : fieldStart;
      const target = offset - (offset % size);
      if (target >= lowest) {
        this.whole.copyWithin(target, offset, offset + bytes.byteLength);
        return this.whole.subarray(target, target + bytes.byteLength);
      }
    }
    const copy = Buffer.allocUnsafe(bytes.byteLength);
    copy.set(bytes);
    return copy;
  }
}

function varintLength(n: number): number {
  let length = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    length++;
  }
  return length;
}

/** The shared-memory window of an input or output, from its `shared_memory_*` parameters. */
function shmTargetIn(params: InferParameterMap | undefined, what: string): ShmTarget | undefined {
  const region = params?.shared_memory_region;
  if (!params || region === undefined) return undefined;
  const int = (p: (typeof params)[string] | undefined) => p?.int64_param ?? p?.uint64_param;
  return shmTargetOf(region.string_param, int(params.shared_memory_byte_size), int(params.shared_memory_offset) ?? 0, what);
}

/**
 * How the outputs a request named go back, by name, when any asked for more than its raw contents (shared
 * memory, classification); undefined when none did. Checked when the request is decoded, so a bad region
 * fails the request before it runs.
 */
export function grpcOutputHandling(msg: ModelInferRequestMessage, model: ModelView, sharedMemory: SharedMemoryManager): Map<string, OutputHandling> | undefined {
  let handling: Map<string, OutputHandling> | undefined;
  for (const o of msg.outputs ?? []) {
    const params = o.parameters;
    if (!params || isEmpty(params)) continue;
    const int = (p: (typeof params)[string] | undefined) => p?.int64_param ?? p?.uint64_param;
    const raw = params.classification;
    const p = {
      region: params.shared_memory_region?.string_param,
      byteSize: int(params.shared_memory_byte_size),
      offset: int(params.shared_memory_offset),
      classification: raw ? Number(int(raw) ?? 0) : undefined,
    };
    const how = outputHandling(model, o.name, p, sharedMemory, `output '${o.name}' for model '${model.name}'`);
    if (how.shm || how.classes) (handling ??= new Map()).set(o.name, how);
  }
  return handling;
}

/**
 * Encodes a response: one `raw_output_contents` entry per output, same order; `contents` is never used. An
 * output bound for shared memory is written there and answered with empty contents.
 */
export function encodeGrpcInfer(
  response: InferenceResponse,
  parameters?: InferParameterMap,
  handling?: ReadonlyMap<string, OutputHandling>,
  sharedMemory?: SharedMemoryManager,
): ModelInferResponseMessage {
  const outputs = response.outputs;
  const msg: ModelInferResponseMessage = {
    model_name: response.modelName,
    model_version: response.modelVersion,
    id: response.id,
    outputs: new Array(outputs.length),
    raw_output_contents: new Array(outputs.length),
  };
  if (response.parameters) msg.parameters = parameters ? { ...toInferParameters(response.parameters), ...parameters } : toInferParameters(response.parameters);
  else if (parameters) msg.parameters = parameters;
  for (let i = 0; i < outputs.length; i++) {
    const { name, tensor: produced } = outputs[i] as NamedTensor;
    const tensor = outputTensor(produced, handling?.get(name), sharedMemory, encodeBinary);
    const sent = tensor ?? produced;
    msg.outputs[i] = { name, datatype: sent.dtype, shape: sent.shape as number[] };
    // An output written to shared memory is answered with empty contents.
    msg.raw_output_contents[i] = tensor ? encodeBinary(tensor) : EMPTY;
  }
  return msg;
}

const EMPTY = new Uint8Array(0);
