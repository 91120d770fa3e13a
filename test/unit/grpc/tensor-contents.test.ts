import type { DataType } from '../../../lib/tensor/dtype';
import { decodeTensorContents } from '../../../lib/protocol/tensor-contents';
import type { InferTensorContentsMessage } from '../../../lib/protocol/messages';

const WHAT = "input 'X' for model 'm'";

describe('decodeTensorContents', () => {
  const cases: [DataType, InferTensorContentsMessage, ArrayBufferView | Uint8Array[]][] = [
    ['BOOL', { bool_contents: [true, false] }, Uint8Array.of(1, 0)],
    ['UINT8', { uint_contents: [255, 0] }, Uint8Array.of(255, 0)],
    ['UINT16', { uint_contents: [65535, 1] }, Uint16Array.of(65535, 1)],
    ['UINT32', { uint_contents: [4294967295, 1] }, Uint32Array.of(4294967295, 1)],
    ['UINT64', { uint64_contents: ['18446744073709551615', 1] }, BigUint64Array.of(2n ** 64n - 1n, 1n)],
    ['INT8', { int_contents: [-128, 127] }, Int8Array.of(-128, 127)],
    ['INT16', { int_contents: [-32768, 32767] }, Int16Array.of(-32768, 32767)],
    ['INT32', { int_contents: [-1, 2147483647] }, Int32Array.of(-1, 2147483647)],
    ['INT64', { int64_contents: ['-9223372036854775808', '9007199254740993'] }, BigInt64Array.of(-(2n ** 63n), 9007199254740993n)],
    ['FP32', { fp32_contents: [1.5, -2] }, Float32Array.of(1.5, -2)],
    ['FP64', { fp64_contents: [Math.PI, -0] }, Float64Array.of(Math.PI, -0)],
    ['BYTES', { bytes_contents: [Buffer.from('a\0'), Buffer.alloc(0)] }, [Buffer.from('a\0'), Buffer.alloc(0)]],
  ];

  it.each(cases)('decodes %s', (dtype, contents, expected) => {
    expect(decodeTensorContents(dtype, [2], contents, WHAT)).toEqual(expected);
  });

  it('ignores empty lists of other types (proto-loader fills defaults)', () => {
    expect(decodeTensorContents('INT32', [1], { int_contents: [4], fp32_contents: [], bytes_contents: [] }, WHAT)).toEqual(Int32Array.of(4));
  });

  it('refuses data in the list of another type', () => {
    expect(() => decodeTensorContents('INT32', [1], { fp32_contents: [1] }, WHAT)).toThrow(
      "unexpected explicit tensor data for input 'X' for model 'm': 'fp32_contents' given for datatype INT32; expected 'int_contents'",
    );
  });

  it.each(['FP16', 'BF16'] as const)('refuses typed contents for %s, which travels raw only', (dtype) => {
    expect(() => decodeTensorContents(dtype, [1], {}, WHAT)).toThrow(`${dtype} data must be sent in raw_input_contents`);
  });

  it('refuses an element count that does not match the shape', () => {
    expect(() => decodeTensorContents('FP32', [2, 2], { fp32_contents: [1, 2, 3] }, WHAT)).toThrow("'fp32_contents' holds 3 elements, shape [2,2] needs 4");
  });
});
