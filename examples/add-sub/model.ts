import { tensor, type Triton } from 'tstriton';
import { batch } from 'tstriton/decorators';

/** `add_sub`: element-wise a + b and a - b over a batch of FP32 vectors. */
class AddSub {
  @batch
  async infer(inputs: Record<string, import('tstriton').Tensor>) {
    const a = inputs.a!.data as Float32Array;
    const b = inputs.b!.data as Float32Array;
    const add = new Float32Array(a.length);
    const sub = new Float32Array(a.length);
    for (let i = 0; i < a.length; i++) {
      add[i] = a[i]! + b[i]!;
      sub[i] = a[i]! - b[i]!;
    }
    return { add: tensor('FP32', inputs.a!.shape, add), sub: tensor('FP32', inputs.a!.shape, sub) };
  }
}

/** Binds `add_sub` on a server. */
export function bindAddSub(triton: Triton): void {
  triton.bind({
    modelName: 'add_sub',
    inferFunc: new AddSub(),
    inputs: [
      { name: 'a', dtype: 'FP32', shape: [-1] },
      { name: 'b', dtype: 'FP32', shape: [-1] },
    ],
    outputs: [
      { name: 'add', dtype: 'FP32', shape: [-1] },
      { name: 'sub', dtype: 'FP32', shape: [-1] },
    ],
    config: { maxBatchSize: 64 },
    strict: true,
  });
}
