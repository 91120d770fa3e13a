import { TritonError, invalidArgument } from '../base/errors';
import { DTYPES, type DataType, type TensorData } from './dtype';
import { float32Text, MAX_FLOAT32_TEXT, writeFloat32 } from './float32-text';
import { JsonFloats } from './lossless-json';
import { elementCount, type Tensor } from './tensor';
import { describeValue } from './wire-value';

/** The range of each integer datatype, as its JSON data must keep to it. */
export const INT_RANGES: Partial<Record<DataType, readonly [bigint, bigint]>> = {
  UINT8: [0n, 0xffn],
  UINT16: [0n, 0xffffn],
  UINT32: [0n, 0xffffffffn],
  UINT64: [0n, 0xffffffffffffffffn],
  INT8: [-0x80n, 0x7fn],
  INT16: [-0x8000n, 0x7fffn],
  INT32: [-0x80000000n, 0x7fffffffn],
  INT64: [-0x8000000000000000n, 0x7fffffffffffffffn],
};

/**
 * Decodes a JSON `data` field (flat or nested, row-major) into the element container of `dtype`.
 * Integer types take JSON integers only (BigInt beyond 2^53), BOOL takes booleans only, BYTES takes
 * strings (UTF-8 encoded); FP16 and BF16 have no JSON form.
 */
export function decodeJsonData<D extends DataType>(
  dtype: D,
  shape: readonly number[],
  data: unknown,
  what: string,
): TensorData<D> {
  const row = DTYPES[dtype];
  if (row.json === 'binary-only') {
    throw invalidArgument(`${what}: sending ${dtype} data via JSON is not supported, use the binary data extension`);
  }
  const count = elementCount(shape);
  if (data instanceof JsonFloats) {
    // Read for this datatype as it was parsed; anything else takes the array JSON.parse would have given.
    if (data.dtype === dtype && data.values.length === count) return data.values as TensorData<D>;
    data = data.elements();
  }
  if (row.json === 'float') {
    const direct = floatsOf(data, count, row.array as Float32ArrayConstructor | Float64ArrayConstructor);
    if (direct) return direct as TensorData<D>;
  }
  const flat: unknown[] = [];
  flatten(data, flat, what);
  if (flat.length !== count) {
    throw invalidArgument(
      `${what}: unable to parse 'data': shape [${shape.join(',')}] needs ${count} elements but 'data' holds ${flat.length}`,
    );
  }
  switch (row.json) {
    case 'string':
      return flat.map((v, i) => {
        if (typeof v !== 'string') throw badElement(what, i, 'a string', v);
        return Buffer.from(v, 'utf8');
      }) as unknown as TensorData<D>;
    case 'bool': {
      const out = new Uint8Array(count);
      flat.forEach((v, i) => {
        if (typeof v !== 'boolean') throw badElement(what, i, 'a boolean', v);
        out[i] = v ? 1 : 0;
      });
      return out as TensorData<D>;
    }
    case 'float': {
      const out = new (row.array as Float32ArrayConstructor | Float64ArrayConstructor)(count);
      flat.forEach((v, i) => {
        if (typeof v === 'number') out[i] = v;
        else if (typeof v === 'bigint') out[i] = Number(v);
        else throw badElement(what, i, 'a number', v);
      });
      return out as TensorData<D>;
    }
    default:
      return decodeIntegers(dtype, flat, what) as TensorData<D>;
  }
}

/**
 * The common case of float data: a flat array of `count` numbers, read straight into the typed array.
 * Anything else (nesting, BigInt literals, a wrong count or element) returns undefined for the general path.
 */
function floatsOf(data: unknown, count: number, Ctor: Float32ArrayConstructor | Float64ArrayConstructor): Float32Array | Float64Array | undefined {
  if (!Array.isArray(data) || data.length !== count) return undefined;
  const out = new Ctor(count);
  for (let i = 0; i < count; i++) {
    const v: unknown = data[i];
    if (typeof v !== 'number') return undefined;
    out[i] = v;
  }
  return out;
}

function decodeIntegers(dtype: DataType, flat: unknown[], what: string): TensorData {
  const [min, max] = INT_RANGES[dtype] as readonly [bigint, bigint];
  const big = dtype === 'INT64' || dtype === 'UINT64';
  const out = new (DTYPES[dtype].array as unknown as new (n: number) => { [i: number]: number | bigint })(flat.length);
  const [minN, maxN] = [Number(min), Number(max)];
  flat.forEach((v, i) => {
    // Numbers in range need no BigInt (JSON.parse gives numbers up to 2^53 exactly).
    if (typeof v === 'number' && Number.isInteger(v) && v >= minN && v <= maxN && Number.isSafeInteger(v)) {
      out[i] = big ? BigInt(v) : v;
      return;
    }
    let b: bigint;
    if (typeof v === 'bigint') b = v;
    else if (typeof v === 'number' && Number.isInteger(v)) b = BigInt(v);
    else throw badElement(what, i, `an integer for ${dtype}`, v);
    if (b < min || b > max) throw badElement(what, i, `an integer in [${min}, ${max}] for ${dtype}`, v);
    out[i] = big ? b : Number(b);
  });
  return out as unknown as TensorData;
}

function flatten(v: unknown, out: unknown[], what: string): void {
  if (!Array.isArray(v)) {
    throw invalidArgument(`${what}: 'data' must be an array, got ${describeValue(v)}`);
  }
  for (const e of v) {
    if (Array.isArray(e)) flatten(e, out, what);
    else out.push(e);
  }
}

function badElement(what: string, index: number, expected: string, got: unknown): TritonError {
  return invalidArgument(`${what}: 'data' element ${index} must be ${expected}, got ${describeValue(got)}`);
}

/** The JSON text of a tensor's elements as a flat array; INT64/UINT64 exact; BYTES as UTF-8 strings. */
export function encodeJsonData(t: Tensor): string {
  if (DTYPES[t.dtype].json === 'string') {
    return JSON.stringify((t.data as Uint8Array[]).map((e) => Buffer.from(e.buffer, e.byteOffset, e.byteLength).toString('utf8')));
  }
  return `[${elementsText(t, 0, t.data.length)}]`;
}

/** Elements joined per chunk by `encodeJsonDataBytes`: small strings, one buffer write each. */
const CHUNK = 1024;

/** The longest JSON text of one numeric or boolean element, with its comma: `-2.2250738585072014e-308,`. */
const MAX_ELEMENT_TEXT = 25;

/**
 * `encodeJsonData` as UTF-8 bytes, written straight into one buffer: for large data, where the text of the
 * whole array as one string (and its encoding afterwards) would cost as much as producing it.
 */
export function encodeJsonDataBytes(t: Tensor): Buffer {
  if (DTYPES[t.dtype].json === 'string') return Buffer.from(encodeJsonData(t), 'utf8');
  const count = t.data.length;
  if (t.dtype === 'FP32') {
    const d = t.data as Float32Array;
    const out = Buffer.allocUnsafe(count * (MAX_FLOAT32_TEXT + 1) + 2);
    let pos = 0;
    out[pos++] = 0x5b; // [
    for (let i = 0; i < count; i++) {
      if (i > 0) out[pos++] = 0x2c; // ,
      pos = writeFloat32(out, pos, d[i]!);
    }
    out[pos++] = 0x5d; // ]
    return out.subarray(0, pos);
  }
  const out = Buffer.allocUnsafe(count * MAX_ELEMENT_TEXT + 2);
  let pos = 0;
  out[pos++] = 0x5b; // [
  for (let i = 0; i < count; i += CHUNK) {
    if (i > 0) out[pos++] = 0x2c; // ,
    pos += out.write(elementsText(t, i, Math.min(count, i + CHUNK)), pos, 'latin1');
  }
  out[pos++] = 0x5d; // ]
  return out.subarray(0, pos);
}

/** The JSON texts of elements [from, to) of a numeric or boolean tensor, comma-separated. */
function elementsText(t: Tensor, from: number, to: number): string {
  const row = DTYPES[t.dtype];
  switch (row.json) {
    case 'binary-only':
      throw invalidArgument(`output of datatype ${t.dtype} cannot be sent as JSON, request it with binary_data`);
    case 'bool': {
      const parts = new Array<string>(to - from);
      const d = t.data as Uint8Array;
      for (let i = from; i < to; i++) parts[i - from] = d[i] ? 'true' : 'false';
      return parts.join(',');
    }
    case 'float': {
      const d = t.data as Float32Array | Float64Array;
      const parts = new Array<string>(to - from);
      if (t.dtype === 'FP32') {
        for (let i = from; i < to; i++) parts[i - from] = float32Text(d[i]!);
        return parts.join(',');
      }
      // Non-finite values have no JSON literal; Triton writes them as null.
      for (let i = from; i < to; i++) {
        const x = d[i] as number;
        // String(-0) is "0"; write "-0.0" as Triton (rapidjson) does so the sign bit survives.
        parts[i - from] = Number.isFinite(x) ? (Object.is(x, -0) ? '-0.0' : String(x)) : 'null';
      }
      return parts.join(',');
    }
    default: {
      const d = t.data as Exclude<Tensor['data'], Uint8Array[]>;
      return Array.prototype.join.call(from === 0 && to === d.length ? d : d.subarray(from, to), ',');
    }
  }
}
