import { invalidArgument } from '../base/errors';
import { DTYPES, type DataType, type TensorData } from './dtype';
import { elementCount, type Tensor } from './tensor';

/**
 * Decodes the binary wire form of a tensor (little-endian, row-major; BYTES as a 4-byte little-endian
 * length before each element) into its element container.
 *
 * Numeric data is a view on `bytes` when it is aligned for the element size; otherwise it is copied
 * once into aligned memory. BYTES elements are views on `bytes`.
 */
export function decodeBinary<D extends DataType>(
  dtype: D,
  shape: readonly number[],
  bytes: Uint8Array,
  what: string,
): TensorData<D> {
  const count = elementCount(shape);
  if (dtype === 'BYTES') return decodeBytesElements(bytes, count, what) as TensorData<D>;
  const row = DTYPES[dtype];
  const Ctor = row.array as unknown as TypedArrayCtor;
  const expected = count * row.size;
  if (bytes.byteLength !== expected) {
    throw invalidArgument(`input byte size mismatch for ${what}. Expected ${expected}, got ${bytes.byteLength}`);
  }
  // Unaligned data is copied once. Buffer.from copies small data into Node's pool, whose slices are 8-byte
  // aligned (cheaper than a new ArrayBuffer per request), and larger data into memory of its own.
  const aligned = bytes.byteOffset % row.size === 0 ? bytes : Buffer.from(bytes);
  return new Ctor(aligned.buffer, aligned.byteOffset, count) as unknown as TensorData<D>;
}

type TypedArrayCtor = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => ArrayBufferView;

/** Splits length-prefixed BYTES elements; each element is a view, embedded NULs kept. */
export function decodeBytesElements(bytes: Uint8Array, count: number, what: string): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  while (pos < bytes.byteLength) {
    if (pos + 4 > bytes.byteLength) {
      throw invalidArgument(`${what}: BYTES element ${out.length} has a truncated 4-byte length prefix`);
    }
    const len = view.getUint32(pos, true);
    pos += 4;
    if (pos + len > bytes.byteLength) {
      throw invalidArgument(`${what}: BYTES element ${out.length} declares ${len} bytes but only ${bytes.byteLength - pos} remain`);
    }
    out.push(bytes.subarray(pos, pos + len));
    pos += len;
  }
  if (out.length !== count) {
    throw invalidArgument(`${what}: expected ${count} BYTES elements for its shape, got ${out.length}`);
  }
  return out;
}

/** The binary wire form of a tensor: a view for numeric data, a new buffer for BYTES. */
export function encodeBinary(t: Tensor): Uint8Array {
  if (t.dtype !== 'BYTES') {
    const v = t.data as ArrayBufferView;
    return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  }
  return encodeBytesElements(t.data as Uint8Array[]);
}

/** Length-prefixes BYTES elements into one buffer. */
export function encodeBytesElements(elements: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const e of elements) total += 4 + e.byteLength;
  const out = Buffer.allocUnsafe(total);
  let pos = 0;
  for (const e of elements) {
    out.writeUInt32LE(e.byteLength, pos);
    out.set(e, pos + 4);
    pos += 4 + e.byteLength;
  }
  return out;
}
