import { outputByteSize } from '../../../lib/perf/shared-memory-regions';

// The size of an output's shared-memory region, as perf_analyzer sizes it: from the model's shape and datatype
// where they fix it, for the batch sent; otherwise the caller's --output-shared-memory-size.
describe('outputByteSize', () => {
  it('is the batch times the elements times the element size where the shape is fixed', () => {
    expect(outputByteSize({ name: 'y', datatype: 'FP32', shape: [3, 4] }, 2)).toBe(2 * 12 * 4);
    expect(outputByteSize({ name: 'y', datatype: 'INT64', shape: [5] }, 1)).toBe(40);
    expect(outputByteSize({ name: 'y', datatype: 'FP16', shape: [] }, 8)).toBe(16);
  });

  it('is unknown for a variable dimension, for BYTES and for a datatype it does not know', () => {
    expect(outputByteSize({ name: 'y', datatype: 'FP32', shape: [-1, 4] }, 2)).toBeUndefined();
    expect(outputByteSize({ name: 'y', datatype: 'BYTES', shape: [2] }, 1)).toBeUndefined();
    expect(outputByteSize({ name: 'y', datatype: 'COMPLEX64', shape: [2] }, 1)).toBeUndefined();
  });
});
