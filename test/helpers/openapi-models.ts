import { tensor, type Triton } from '../../lib';
import { batch } from '../../decorators';

/**
 * The models the OpenAPI tests document and call: `add_sub` (FP32, batching, a warmup of batch 2 and parameters),
 * `mixed` (FP16, BYTES, BOOL and INT64 inputs, a variable dim, batching) and `plain` (no batching, an optional
 * input).
 */
export function bindOpenApiModels(triton: Triton): void {
  triton.bind({
    modelName: 'add_sub',
    inferFunc: batch(async ({ a, b }) => {
      const x = a!.data as Float32Array;
      const y = b!.data as Float32Array;
      return { sum: tensor('FP32', a!.shape, x.map((v, i) => v + y[i]!)), diff: tensor('FP32', a!.shape, x.map((v, i) => v - y[i]!)) };
    }),
    inputs: [
      { name: 'a', dtype: 'FP32', shape: [3] },
      { name: 'b', dtype: 'FP32', shape: [3] },
    ],
    outputs: [
      { name: 'sum', dtype: 'FP32', shape: [3] },
      { name: 'diff', dtype: 'FP32', shape: [3] },
    ],
    config: {
      maxBatchSize: 8,
      parameters: { units: 'metres' },
      warmup: [{ name: 'zeros', batchSize: 2, inputs: { a: { dtype: 'FP32', dims: [3] }, b: { dtype: 'FP32', dims: [3] } } }],
    },
  });
  triton.bind({
    modelName: 'mixed',
    // Per row: how many flags are set, and the byte length of the text.
    inferFunc: batch(async ({ flags, text, ids, half }) => {
      const rows = flags!.shape[0]!;
      const perRow = flags!.shape[1]!;
      const set = new BigInt64Array(rows);
      for (let r = 0; r < rows; r++) for (let i = 0; i < perRow; i++) set[r]! += BigInt((flags!.data as Uint8Array)[r * perRow + i]!);
      void ids;
      void half;
      const lengths = new BigInt64Array(rows);
      (text!.data as Uint8Array[]).forEach((t, i) => (lengths[Math.floor(i / 2)]! += BigInt(t.length)));
      return { set: tensor('INT64', [rows, 1], set), length: tensor('INT64', [rows, 1], lengths) };
    }),
    inputs: [
      { name: 'half', dtype: 'FP16', shape: [-1] },
      { name: 'text', dtype: 'BYTES', shape: [2] },
      { name: 'flags', dtype: 'BOOL', shape: [-1] },
      { name: 'ids', dtype: 'INT64', shape: [2] },
    ],
    outputs: [
      { name: 'set', dtype: 'INT64', shape: [1] },
      { name: 'length', dtype: 'INT64', shape: [1] },
    ],
    config: { maxBatchSize: 4 },
  });
  triton.bind({
    modelName: 'plain',
    inferFunc: async (requests) =>
      requests.map((r) => ({ echo: tensor('INT32', r.inputs.x!.shape, (r.inputs.x!.data as Int32Array).slice()) })),
    inputs: [
      { name: 'x', dtype: 'INT32', shape: [2, -1] },
      { name: 'scale', dtype: 'FP64', shape: [1], optional: true },
    ],
    outputs: [{ name: 'echo', dtype: 'INT32', shape: [2, -1] }],
    config: { batching: false },
  });
}
