import { DATA_TYPES, type Triton } from 'tstriton';
import { batch } from 'tstriton/decorators';

/** Binds `identity_<type>` for every datatype: INPUT0 comes back unchanged as OUTPUT0. */
export function bindIdentity(triton: Triton): void {
  for (const dtype of DATA_TYPES) {
    triton.bind({
      modelName: `identity_${dtype.toLowerCase()}`,
      inferFunc: batch(async (inputs) => ({ OUTPUT0: inputs.INPUT0! })),
      inputs: [{ name: 'INPUT0', dtype, shape: [-1] }],
      outputs: [{ name: 'OUTPUT0', dtype, shape: [-1] }],
      config: { maxBatchSize: 64 },
      strict: true,
    });
  }
}
