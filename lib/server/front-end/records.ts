import type { InferenceRequest, InferenceResponse, NamedTensor } from '../../model/inference';
import { DATA_TYPES, DTYPES, type DataType } from '../../tensor/dtype';
import type { Tensor } from '../../tensor/tensor';
import type { Protocol } from '../infer-entry';
import type { RecordReader, RecordWriter } from './hand-off';
import { packRequest, packResponse, type InferItem, type PackedRequest, type ResultItem, type Staging } from './messages';
import type { PackedError } from './packed-error';

/**
 * The records of the hand-off between threads (hand-off.ts): a request on its way to the core thread, and a
 * response or an error on its way back. The fields every request has are written as binary; the rest (request
 * parameters, a timeout, a sequence's correlation id, ...) as JSON when JSON carries them unchanged. A request or
 * response that a record cannot carry (headers to forward, a tensor over `RECORD_TENSOR_BYTES`, a BigInt) crosses
 * as a structured clone instead: `packHanded` and `packOutgoing`.
 */

/** A request as a front-end thread hands it over: its tensors still the transport's. */
export type Handed = InferItem<InferenceRequest>;

/** A response or an error as the core thread hands it back: its tensors still the core's (a batch, the cache). */
export type Outgoing = ResultItem<InferenceResponse>;

/** Tensors of at most this many bytes go in records; larger ones cross as before, moved or copied once. */
export const RECORD_TENSOR_BYTES = 16 * 1024;

/** Request fields written as binary; the others go as JSON. What stays on the front-end thread is left out. */
const REQUEST_FIELDS = new Set(['modelName', 'modelVersion', 'id', 'inputs', 'parameters', 'cancellation', 'memory', 'movableBuffer']);
const RESPONSE_FIELDS = new Set(['id', 'modelName', 'modelVersion', 'outputs', 'span']);
const PROTOCOLS: readonly (Protocol | undefined)[] = [undefined, 'HTTP', 'GRPC'];
const DTYPE_CODE = new Map<DataType, number>(DATA_TYPES.map((d, i) => [d, i]));
const KIND_RESPONSE = 0;
const KIND_FINAL = 1;
const KIND_ERROR = 2;

export function encodeHanded(w: RecordWriter, h: Handed): boolean {
  if (h.headers !== undefined) return false;
  const { request } = h;
  const rest = restOf(request, REQUEST_FIELDS, request.parameters);
  if (rest === null) return false;
  w.u32(h.id);
  w.name(h.modelName);
  w.name(h.modelVersion);
  w.u8(PROTOCOLS.indexOf(h.protocol));
  w.name(h.unaryEndpoint);
  w.name(request.modelName);
  w.name(request.modelVersion);
  w.str(request.id);
  w.str(rest);
  return writeTensors(w, request.inputs);
}

export function decodeHanded(r: RecordReader): InferItem {
  const id = r.u32();
  const modelName = r.str() as string;
  const modelVersion = r.str();
  const protocol = PROTOCOLS[r.u8()];
  const unaryEndpoint = r.str();
  const request = { modelName: r.str() as string, modelVersion: r.str(), id: r.str() as string, parameters: {} } as { -readonly [K in keyof PackedRequest]: PackedRequest[K] };
  const rest = r.str();
  if (rest !== undefined) Object.assign(request, JSON.parse(rest));
  request.inputs = readTensors(r);
  return { id, modelName, modelVersion, protocol, unaryEndpoint, headers: undefined, request };
}

/** The request as a structured clone, its tensors moved or copied into `staging`. */
export function packHanded(h: Handed, staging: Staging): InferItem {
  return { ...h, request: packRequest(h.request, staging) };
}

export function encodeOutgoing(w: RecordWriter, o: Outgoing): boolean {
  w.u32(o.id);
  if ('error' in o) {
    w.u8(KIND_ERROR);
    w.name(o.error.code);
    w.str(o.error.message);
    return true;
  }
  const { response } = o;
  const rest = restOf(response, RESPONSE_FIELDS, undefined);
  if (rest === null) return false;
  w.u8(o.final ? KIND_FINAL : KIND_RESPONSE);
  w.str(response.id);
  w.name(response.modelName);
  w.name(response.modelVersion);
  w.str(rest);
  return writeTensors(w, response.outputs);
}

export function decodeOutgoing(r: RecordReader): ResultItem {
  const id = r.u32();
  const kind = r.u8();
  if (kind === KIND_ERROR) return { id, error: { code: r.str(), message: r.str() } as PackedError };
  const response = { id: r.str() as string, modelName: r.str() as string, modelVersion: r.str() as string } as { -readonly [K in keyof InferenceResponse]: InferenceResponse[K] };
  const rest = r.str();
  if (rest !== undefined) Object.assign(response, JSON.parse(rest));
  response.outputs = readTensors(r);
  return { id, response, final: kind === KIND_FINAL };
}

/** The response as a structured clone, its tensors copied into `staging`. */
export function packOutgoing(o: Outgoing, staging: Staging): ResultItem {
  return 'error' in o ? o : { id: o.id, response: packResponse(o.response, staging), final: o.final };
}

/**
 * `object`'s other fields (those not in `binary`, and `parameters` when it has any) as JSON; undefined when there
 * are none, null when JSON would change one (a BigInt, -0, a non-finite number, a class instance).
 */
function restOf(object: object, binary: ReadonlySet<string>, parameters: object | undefined): string | undefined | null {
  let rest: Record<string, unknown> | undefined;
  for (const key in object) {
    const value = (object as Record<string, unknown>)[key];
    if (value === undefined || (binary.has(key) && !(key === 'parameters' && hasKeys(parameters)))) continue;
    if (!plain(value)) return null;
    (rest ??= {})[key] = value;
  }
  return rest && JSON.stringify(rest);
}

function hasKeys(object: object | undefined): boolean {
  for (const _ in object) return true;
  return false;
}

/** Whether JSON gives `value` back as it is. */
function plain(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      if (Array.isArray(value)) return value.every(plain);
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in value) if (!plain((value as Record<string, unknown>)[key])) return false;
      return true;
    }
    default:
      return false;
  }
}

function writeTensors(w: RecordWriter, tensors: readonly NamedTensor[]): boolean {
  w.u32(tensors.length);
  for (const { name, tensor } of tensors) {
    w.name(name);
    if (!writeTensor(w, tensor)) return false;
  }
  return true;
}

function writeTensor(w: RecordWriter, tensor: Tensor): boolean {
  const code = DTYPE_CODE.get(tensor.dtype);
  const { shape, data } = tensor;
  if (code === undefined || shape.length > 255) return false;
  w.u8(code);
  w.u8(shape.length);
  for (const d of shape) {
    if (typeof d !== 'number') return false;
    w.f64(d);
  }
  const array = DTYPES[tensor.dtype].array;
  if (array !== null) {
    // Read back as whole elements of the datatype's array: any other byte length crosses as it is.
    if (!ArrayBuffer.isView(data) || data.byteLength > RECORD_TENSOR_BYTES || data.byteLength % array.BYTES_PER_ELEMENT !== 0) return false;
    w.u32(data.byteLength);
    w.data(data);
    return true;
  }
  if (!Array.isArray(data)) return false;
  let total = 0;
  for (const element of data as unknown[]) {
    if (!ArrayBuffer.isView(element)) return false;
    total += element.byteLength;
  }
  if (total > RECORD_TENSOR_BYTES) return false;
  w.u32(data.length);
  for (const element of data as Uint8Array[]) {
    w.u32(element.byteLength);
    w.raw(element);
  }
  return true;
}

function readTensors(r: RecordReader): NamedTensor[] {
  const n = r.u32();
  const tensors: NamedTensor[] = [];
  for (let i = 0; i < n; i++) {
    const name = r.str() as string;
    tensors.push({ name, tensor: readTensor(r) });
  }
  return tensors;
}

type ViewConstructor = new (buffer: ArrayBuffer, offset: number, length: number) => Tensor["data"];

function readTensor(r: RecordReader): Tensor {
  const dtype = DATA_TYPES[r.u8()] as DataType;
  const ndim = r.u8();
  const shape: number[] = [];
  for (let i = 0; i < ndim; i++) shape.push(r.f64());
  const array = DTYPES[dtype].array;
  if (array !== null) {
    const bytes = r.u32();
    return { dtype, shape, data: r.data(array as ViewConstructor, array.BYTES_PER_ELEMENT, bytes) } as Tensor;
  }
  const count = r.u32();
  const elements: Uint8Array[] = [];
  for (let i = 0; i < count; i++) elements.push(r.bytes(r.u32()));
  return { dtype, shape, data: elements } as Tensor;
}
