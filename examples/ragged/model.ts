import { tensor, type Tensor, type Triton } from 'tstriton';
import { batch } from 'tstriton/decorators';

/**
 * `ragged_sum`: the sum of each request's FP32 vector, whatever its length. `INPUT` allows ragged batches, so
 * requests of different lengths batch together; `@batch` hands the batch over as one flat tensor of every
 * element plus `INDEX`, Triton's BATCH_ACCUMULATED_ELEMENT_COUNT: where each request's elements end.
 */
class RaggedSum {
  @batch
  infer(inputs: Record<string, Tensor>) {
    const flat = inputs.INPUT!.data as Float32Array;
    const ends = inputs.INDEX!.data as Int32Array;
    const sums = new Float32Array(ends.length);
    let start = 0;
    ends.forEach((end, i) => {
      let s = 0;
      for (let j = start; j < end; j++) s += flat[j]!;
      sums[i] = s;
      start = end;
    });
    return { SUM: tensor('FP32', [ends.length, 1], sums) };
  }
}

/** Binds `ragged_sum` on a server. */
export function bindRaggedSum(triton: Triton): void {
  triton.bind({
    modelName: 'ragged_sum',
    inferFunc: new RaggedSum(),
    inputs: [{ name: 'INPUT', dtype: 'FP32', shape: [-1], allowRaggedBatch: true }],
    outputs: [{ name: 'SUM', dtype: 'FP32', shape: [1] }],
    config: {
      maxBatchSize: 16,
      // A burst of requests waits up to 2 ms to fill a batch.
      batcher: { maxQueueDelayMicroseconds: 2000 },
      batchInput: [{ kind: 'BATCH_ACCUMULATED_ELEMENT_COUNT', targetName: 'INDEX', dtype: 'INT32', sourceInput: 'INPUT' }],
    },
    strict: true,
  });
}
