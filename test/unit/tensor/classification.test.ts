import { classify } from '../../../lib/tensor/classification';
import { tensor } from '../../../lib';

const strings = (t: { data: Uint8Array[] }) => t.data.map((e) => Buffer.from(e).toString());

describe('classify', () => {
  it("returns Triton's example: the top classes by value as value:index, highest first", () => {
    const out = classify(tensor('FP32', [1, 4], Float32Array.of(1.1, 3.3, 0.5, 2.4)), 'output0', { count: 2, batched: true });
    expect(out.dtype).toBe('BYTES');
    expect(out.shape).toEqual([1, 2]);
    expect(strings(out)).toEqual(['3.300000:1', '2.400000:3']);
  });

  it('ranks each batch row on its own, appends labels, and keeps index order on ties', () => {
    const out = classify(tensor('INT32', [2, 3], Int32Array.of(5, 9, 5, 1, 1, 2)), 'y', { count: 3, batched: true, labels: ['a', 'b', 'c'] });
    expect(out.shape).toEqual([2, 3]);
    expect(strings(out)).toEqual(['9:1:b', '5:0:a', '5:2:c', '2:2:c', '1:0:a', '1:1:b']);
  });

  it('treats a non-batched output as one row, caps the count at the classes there are, and compares 64-bit integers exactly', () => {
    const out = classify(tensor('INT64', [3], BigInt64Array.of(2n ** 62n, 2n ** 62n + 1n, -1n)), 'y', { count: 10, batched: false });
    expect(out.shape).toEqual([3]);
    expect(strings(out)).toEqual([`${2n ** 62n + 1n}:1`, `${2n ** 62n}:0`, '-1:2']);
  });

  it('widens FP16 and BF16 values', () => {
    // FP16 0x3c00 = 1, 0x4000 = 2; BF16 0x3f80 = 1, 0xc000 = -2.
    expect(strings(classify(tensor('FP16', [2], Uint16Array.of(0x3c00, 0x4000)), 'y', { count: 1, batched: false }))).toEqual(['2.000000:1']);
    expect(strings(classify(tensor('BF16', [2], Uint16Array.of(0x3f80, 0xc000)), 'y', { count: 2, batched: false }))).toEqual(['1.000000:0', '-2.000000:1']);
  });

  it('refuses a BYTES output', () => {
    expect(() => classify(tensor('BYTES', [1], [Buffer.from('x')]), 'y', { count: 1, batched: false })).toThrow("output 'y': classification needs a numeric output, not BYTES");
  });
});
