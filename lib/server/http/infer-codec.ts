import { constants as bufferConstants } from 'node:buffer';
import type { RequestMemory } from '../../tensor/buffer-pool';
import type { Cancellation } from '../../base/cancellation';
import { TritonError, invalidArgument, tritonError } from '../../base/errors';
import type { InferenceRequest, InferenceResponse, NamedTensor } from '../../model/inference';
import type { ModelView } from '../../model/model-view';
import { decodeBinary, encodeBinary } from '../../tensor/binary-codec';
import { DTYPES, isDataType } from '../../tensor/dtype';
import { decodeJsonData, encodeJsonData, encodeJsonDataBytes } from '../../tensor/json-codec';
import { decodeUtf8, parseJson, parseJsonBytes } from '../../tensor/lossless-json';
import { describeValue } from '../../tensor/wire-value';
import { parametersJson } from '../../protocol/infer-parameter';
import { parseParameters } from '../parameters';
import { shmTargetOf, type SharedMemoryManager } from '../shared-memory';
import { outputHandling, outputTensor, sharedMemoryInput, type OutputHandling } from '../infer-request';

/** A decoded HTTP infer request plus what the encoder needs to answer it. */
export interface DecodedHttpInfer {
  request: InferenceRequest;
  /** The outputs the request named with their `binary_data` flag, in order (none when it named no outputs). */
  binaryByOutput: readonly OutputHandling[] | undefined;
  /** Binary for outputs the request did not list (`binary_data_output`). */
  binaryDefault: boolean;
  /** Where shared-memory outputs are written. */
  sharedMemory?: SharedMemoryManager;
}

/**
 * A request's `Inference-Header-Content-Length` as a number, null when it has none.
 *
 * @throws TritonError `INVALID_ARGUMENT` (Triton's message) unless it is an integer from 0 to the body's length.
 */
export function inferHeaderLength(value: string | string[] | undefined, bodyLength: number): number | null {
  if (value === undefined) return null;
  const n = Number(value);
  checkHeaderLength(n, bodyLength, value);
  return n;
}

function checkHeaderLength(n: number, bodyLength: number, got: unknown): void {
  if (!Number.isInteger(n) || n < 0 || n > bodyLength) throw tritonError('headerSize', { bodyLength, got: String(got) });
}

/**
 * Decodes a KServe v2 HTTP infer body: a JSON header of `headerLength` bytes (the whole body when null)
 * followed by the binary tensor section. A header length of 0 is a raw binary request for a model with
 * one input.
 */
export function decodeHttpInfer(
  body: Buffer,
  headerLength: number | null,
  model: ModelView,
  maxDepth: number,
  cancellation: Cancellation,
  movableBuffer?: ArrayBufferLike,
  sharedMemory?: SharedMemoryManager,
  memory?: RequestMemory,
): DecodedHttpInfer {
  if (headerLength === 0) return decodeRawBinary(body, model, cancellation);
  const jsonLength = headerLength ?? body.length;
  checkHeaderLength(jsonLength, body.length, jsonLength);
  if (jsonLength > MAX_STRING_LENGTH) {
    // Beyond this, decoding the header to text throws a RangeError (a server fault) before the parser sees it.
    throw new TritonError(
      'PAYLOAD_TOO_LARGE',
      `the inference request JSON of ${jsonLength} bytes exceeds the ${MAX_STRING_LENGTH} characters a JSON header can hold; send tensor data with the binary data extension`,
    );
  }
  // JSON.parse is quicker on a small header; a large one (tensor data) is read from its bytes, floats straight
  // into their typed arrays.
  const header =
    jsonLength < BYTES_PARSE_MIN ? parseJson(decodeUtf8(body.subarray(0, jsonLength)), maxDepth) : parseJsonBytes(jsonLength === body.length ? body : body.subarray(0, jsonLength), maxDepth, true);
  if (!isObject(header)) throw invalidArgument(`the inference request JSON must be an object, got ${describeValue(header)}`);
  const id = header.id ?? '';
  if (typeof id !== 'string') throw invalidArgument(`the request 'id' must be a string, got ${describeValue(id)}`);
  const { parameters, priority, timeoutMicroseconds, binaryDataOutput, sequence } = parseParameters(header.parameters, 'request');

  if (!Array.isArray(header.inputs)) throw invalidArgument(`the inference request must have an 'inputs' array, got ${describeValue(header.inputs)}`);
  let offset = jsonLength;
  const align = movableBuffer ? new InPlaceAligner(body) : undefined;
  const inputs: NamedTensor[] = header.inputs.map((raw: unknown, i: number) => {
    if (!isObject(raw)) throw invalidArgument(`input ${i} must be an object, got ${describeValue(raw)}`);
    const name = raw.name;
    if (typeof name !== 'string') throw invalidArgument(`input ${i} must have a string 'name', got ${describeValue(name)}`);
    const what = `input '${name}' for model '${model.name}'`;
    const dtype = raw.datatype;
    if (!isDataType(dtype)) throw invalidArgument(datatypeProblem(what, dtype));
    const shape = raw.shape;
    if (!isShape(shape)) throw invalidArgument(`${what}: 'shape' must be an array of non-negative integers, got ${describeValue(shape)}`);
    const params = raw.parameters === undefined ? NO_PARAMETERS : raw.parameters;
    if (!isObject(params)) throw invalidArgument(`${what}: 'parameters' must be an object, got ${describeValue(params)}`);
    const binarySize = params.binary_data_size;
    const sources = (raw.data !== undefined ? 1 : 0) + (binarySize !== undefined ? 1 : 0) + (params.shared_memory_region !== undefined ? 1 : 0);
    if (sources !== 1) {
      throw invalidArgument(
        "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. " +
          `But ${what} sets ${sources === 0 ? 'none' : 'more than one'}`,
      );
    }
    const shm = shmTargetOf(params.shared_memory_region, params.shared_memory_byte_size, params.shared_memory_offset, what);
    if (shm) return { name, tensor: { dtype, shape, data: sharedMemoryInput(dtype, shape, shm, sharedMemory, what) } };
    if (binarySize !== undefined) {
      const size = typeof binarySize === 'bigint' ? Number(binarySize) : binarySize;
      if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) {
        throw invalidArgument(`${what}: 'binary_data_size' must be a non-negative integer, got ${describeValue(binarySize)}`);
      }
      if (headerLength === null) {
        throw invalidArgument("must specify valid 'Infer-Header-Content-Length' in request header and 'binary_data_size' when passing inputs in binary data format");
      }
      if (offset + size > body.length) {
        throw invalidArgument(`unexpected size for input '${name}', expecting ${offset + size - body.length} additional bytes for model '${model.name}'`);
      }
      const bytes = align && dtype !== 'BYTES' ? align.place(offset, size, DTYPES[dtype].size) : body.subarray(offset, offset + size);
      offset += size;
      return { name, tensor: { dtype, shape, data: decodeBinary(dtype, shape, bytes, what) } };
    }
    return { name, tensor: { dtype, shape, data: decodeJsonData(dtype, shape, raw.data, what) } };
  });
  if (offset !== body.length) throw invalidArgument(`unexpected additional input data for model '${model.name}'`);

  let binaryByOutput: OutputHandling[] | undefined;
  let requestedOutputs: string[] | undefined;
  if (header.outputs !== undefined) {
    if (!Array.isArray(header.outputs)) throw invalidArgument(`'outputs' must be an array, got ${describeValue(header.outputs)}`);
    requestedOutputs = header.outputs.map((raw: unknown, i: number) => {
      if (!isObject(raw)) throw invalidArgument(`output ${i} must be an object, got ${describeValue(raw)}`);
      if (typeof raw.name !== 'string') throw invalidArgument(`output ${i} must have a string 'name', got ${describeValue(raw.name)}`);
      const params = raw.parameters ?? {};
      if (!isObject(params)) throw invalidArgument(`output '${raw.name}': 'parameters' must be an object, got ${describeValue(params)}`);
      const p = { region: params.shared_memory_region, byteSize: params.shared_memory_byte_size, offset: params.shared_memory_offset, classification: params.classification, binary: params.binary_data };
      (binaryByOutput ??= []).push(outputHandling(model, raw.name, p, sharedMemory, `output '${raw.name}'`));
      return raw.name;
    });
  }
  return {
    request: {
      modelName: model.name,
      modelVersion: model.version,
      id,
      inputs,
      requestedOutputs,
      parameters,
      priority,
      timeoutMicroseconds,
      ...(sequence && { sequence }),
      cancellation,
      movableBuffer,
      memory,
    },
    binaryByOutput,
    binaryDefault: binaryDataOutput,
    sharedMemory,
  };
}

/** Raw binary request (header length 0): the whole body is the single input's data, batch 1. */
function decodeRawBinary(body: Buffer, model: ModelView, cancellation: Cancellation): DecodedHttpInfer {
  const [spec, ...rest] = model.inputs;
  if (!spec || rest.length > 0) {
    throw invalidArgument(`raw binary request requires model '${model.name}' to have exactly one input, it has ${model.inputs.length}`);
  }
  const what = `input '${spec.name}' for model '${model.name}'`;
  const batch = model.config.effectiveMaxBatchSize > 0 ? [1] : [];
  let shape: number[];
  if (spec.dtype === 'BYTES') {
    shape = [...batch, ...spec.shape.map(() => 1)];
  } else {
    const variable = spec.shape.filter((d) => d === -1).length;
    if (variable > 1) throw invalidArgument(`raw binary request: ${what} has more than one variable dim`);
    const fixed = spec.shape.reduce((n, d) => (d === -1 ? n : n * d), 1);
    const elements = body.length / DTYPES[spec.dtype].size;
    const free = fixed === 0 ? 0 : elements / fixed;
    if (!Number.isInteger(free) || (variable === 0 && elements !== fixed)) {
      throw invalidArgument(`raw binary request: ${body.length} bytes do not fit ${what} of shape [${spec.shape.join(',')}]`);
    }
    shape = [...batch, ...spec.shape.map((d) => (d === -1 ? free : d))];
  }
  return {
    request: {
      modelName: model.name,
      modelVersion: model.version,
      id: '',
      inputs: [{ name: spec.name, tensor: { dtype: spec.dtype, shape, data: decodeBinary(spec.dtype, shape, body, what) } }],
      parameters: {},
      cancellation,
    },
    binaryByOutput: undefined,
    binaryDefault: true,
  };
}

/**
 * An encoded infer response: the JSON header and the binary blobs that follow it, in output order. The header
 * is one string, or its pieces in order when it holds large `data` arrays (written as bytes, not as text).
 */
export interface EncodedHttpInfer {
  json: string | (string | Uint8Array)[];
  blobs: Uint8Array[];
}

/** From this many elements on, an output's JSON `data` is written as bytes rather than joined into the header string. */
const LARGE_JSON_DATA = 4096;

/** Encodes a response: JSON `data` or binary blobs per output, as the request asked. */
export function encodeHttpInfer(response: InferenceResponse, decoded: DecodedHttpInfer): EncodedHttpInfer {
  const blobs: Uint8Array[] = [];
  let pieces: (string | Uint8Array)[] | undefined;
  const id = response.id ? `"id":${JSON.stringify(response.id)},` : '';
  const parameters = response.parameters ? `"parameters":${parametersJson(response.parameters)},` : '';
  let text = `{${id}"model_name":${JSON.stringify(response.modelName)},"model_version":${JSON.stringify(response.modelVersion)},${parameters}"outputs":[`;
  response.outputs.forEach(({ name, tensor: produced }, i) => {
    if (i > 0) text += ',';
    const format = formatFor(decoded, name);
    const tensor = outputTensor(produced, format, decoded.sharedMemory, encodeBinary);
    if (!tensor) {
      text += `{"name":${JSON.stringify(name)},"datatype":"${produced.dtype}","shape":[${produced.shape.join(',')}]}`;
      return;
    }
    text += `{"name":${JSON.stringify(name)},"datatype":"${tensor.dtype}","shape":[${tensor.shape.join(',')}]`;
    if (!(format?.binary ?? decoded.binaryDefault)) {
      if (tensor.data.length < LARGE_JSON_DATA) {
        text += `,"data":${encodeJsonData(tensor)}}`;
        return;
      }
      (pieces ??= []).push(`${text},"data":`, encodeJsonDataBytes(tensor));
      text = '}';
      return;
    }
    const blob = encodeBinary(tensor);
    if (blob.byteLength > 0) blobs.push(blob);
    text += `,"parameters":{"binary_data_size":${blob.byteLength}}}`;
  });
  text += ']}';
  if (!pieces) return { json: text, blobs };
  pieces.push(text);
  return { json: pieces, blobs };
}

/** Headers from this many bytes on are parsed from their bytes (`parseJsonBytes`). */
const BYTES_PARSE_MIN = 4096;

const NO_PARAMETERS: Readonly<Record<string, unknown>> = Object.freeze({});

/** The longest string V8 makes, in UTF-16 code units; a UTF-8 header never decodes to more characters than bytes. */
const MAX_STRING_LENGTH = bufferConstants.MAX_STRING_LENGTH;

/** How output `name` goes back as the request named it; undefined when it did not (the request's default). */
function formatFor(decoded: DecodedHttpInfer, name: string): OutputHandling | undefined {
  let format: OutputHandling | undefined;
  // The last mention wins, should a request name an output twice.
  if (decoded.binaryByOutput) for (const o of decoded.binaryByOutput) if (o.name === name) format = o;
  return format;
}

/** Why a `datatype` field is not a datatype: not a string at all, or a string the table does not know. */
function datatypeProblem(what: string, dtype: unknown): string {
  return typeof dtype === 'string' ? `${what}: unknown datatype ${describeValue(dtype)}` : `${what}: 'datatype' must be a string, got ${describeValue(dtype)}`;
}

function isShape(v: unknown): v is number[] {
  if (!Array.isArray(v)) return false;
  for (const d of v) if (!Number.isInteger(d) || (d as number) < 0) return false;
  return true;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Moves misaligned binary inputs back, in place, to where a typed array of their element size can view them, in a
 * body that holds this request alone (`movableBuffer`). The JSON header in front of the binary section is parsed
 * and no longer read, so each input may move back over it, or over room the input before it left by moving, by
 * less than its element size; a 4 MB tensor then costs a memmove rather than a new 4 MB buffer. Inputs lie in the
 * body in order, and are placed in that order.
 */
class InPlaceAligner {
  /** Where the last placed input ends (body offset); nothing before it may be overwritten. */
  private placedEnd = 0;

  constructor(private readonly body: Buffer) {}

  place(offset: number, size: number, elementSize: number): Buffer {
    const absolute = this.body.byteOffset + offset;
    const target = offset - (absolute % elementSize);
    if (target !== offset && target >= this.placedEnd) {
      this.body.copyWithin(target, offset, offset + size);
      this.placedEnd = target + size;
      return this.body.subarray(target, target + size);
    }
    this.placedEnd = offset + size;
    return this.body.subarray(offset, offset + size);
  }
}
