import { tensor, type Tensor, type Triton } from 'tstriton';
import { batch } from 'tstriton/decorators';

/**
 * `sequence_accumulate`: the running sum of `INPUT` within a sequence. The sum lives in Triton's implicit
 * state: the callable reads it as `INPUT_STATE` (zeros when the sequence starts) and writes the next one as
 * `OUTPUT_STATE`; the server keeps it per sequence between requests.
 */
export class SequenceAccumulate {
  @batch
  infer(inputs: Record<string, Tensor>) {
    const x = inputs.INPUT!.data as Int32Array;
    const state = inputs.INPUT_STATE!.data as Int32Array;
    const sum = new Int32Array(x.length);
    for (let i = 0; i < x.length; i++) sum[i] = state[i]! + x[i]!;
    const shape = inputs.INPUT!.shape;
    return { OUTPUT: tensor('INT32', shape, sum), OUTPUT_STATE: tensor('INT32', shape, sum.slice()) };
  }
}

/** Binds `sequence_accumulate` on a server. */
export function bindSequenceAccumulate(triton: Triton): void {
  triton.bind({
    modelName: 'sequence_accumulate',
    inferFunc: new SequenceAccumulate(),
    inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
    outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
    config: {
      maxBatchSize: 8,
      sequenceBatching: {
        oldest: { maxCandidateSequences: 8 },
        maxSequenceIdleMicroseconds: 5_000_000,
        state: [{ inputName: 'INPUT_STATE', outputName: 'OUTPUT_STATE', dtype: 'INT32', dims: [1], initialState: [{ name: 'zero', dtype: 'INT32', dims: [1], zeroData: true }] }],
      },
    },
    strict: true,
  });
}
