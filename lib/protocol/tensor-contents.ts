import { TritonError } from '../base/errors';
import { DTYPES, type DataType, type TensorData } from '../tensor/dtype';
import { elementCount } from '../tensor/tensor';
import type { InferTensorContentsMessage, Int64 } from './messages';

type ContentsField = keyof InferTensorContentsMessage;

/** Which `InferTensorContents` list carries each datatype; FP16 and BF16 travel raw only. */
const FIELD: Record<DataType, ContentsField | null> = {
  BOOL: 'bool_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  FP16: null,
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
  BF16: null,
};

const FIELDS: readonly ContentsField[] = [
  'bool_contents',
  'int_contents',
  'int64_contents',
  'uint_contents',
  'uint64_contents',
  'fp32_contents',
  'fp64_contents',
  'bytes_contents',
];

/**
 * Decodes an input's typed `contents` (the non-raw form third-party KServe clients use) into the element
 * container of `dtype`. Exactly the list matching the datatype may be filled, with one entry per element.
 */
export function decodeTensorContents<D extends DataType>(
  dtype: D,
  shape: readonly number[],
  contents: InferTensorContentsMessage,
  what: string,
): TensorData<D> {
  const field = FIELD[dtype];
  for (const f of FIELDS) {
    if (f !== field && (contents[f]?.length ?? 0) > 0) {
      const expected = field === null ? `${dtype} data must be sent in raw_input_contents` : `expected '${field}'`;
      throw new TritonError('INVALID_ARGUMENT', `unexpected explicit tensor data for ${what}: '${f}' given for datatype ${dtype}; ${expected}`);
    }
  }
  if (field === null) throw new TritonError('INVALID_ARGUMENT', `${what}: ${dtype} data must be sent in raw_input_contents`);
  const list = (contents[field] ?? []) as readonly unknown[];
  const count = elementCount(shape);
  if (list.length !== count) {
    throw new TritonError('INVALID_ARGUMENT', `${what}: '${field}' holds ${list.length} elements, shape [${shape.join(',')}] needs ${count}`);
  }
  if (dtype === 'BYTES') return (list as Uint8Array[]).slice() as TensorData<D>;
  if (dtype === 'BOOL') return Uint8Array.from(list as boolean[], (b) => (b ? 1 : 0)) as TensorData<D>;
  if (dtype === 'INT64' || dtype === 'UINT64') {
    const values = (list as Int64[]).map((v) => BigInt(v));
    return (dtype === 'INT64' ? BigInt64Array.from(values) : BigUint64Array.from(values)) as TensorData<D>;
  }
  const Ctor = DTYPES[dtype].array as unknown as { from(list: ArrayLike<number>): TensorData<D> };
  return Ctor.from(list as number[]);
}
