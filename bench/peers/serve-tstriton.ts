/**
 * tstriton's server for the side-by-side (bench/peers): add_sub, identity and the ONNX MLP, as the PyTriton and
 * MLServer servers in this folder serve them. Ports from TSTRITON_HTTP_PORT / TSTRITON_GRPC_PORT (8000 / 8001).
 *
 *   node dist/bench/peers/serve-tstriton.js
 */
import * as path from 'node:path';
import { onnxModel, tensor, Triton, type Tensor } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { repoRoot } from '../harness/repo-root';

async function main(): Promise<void> {
  const triton = new Triton({ allowMetrics: false, logLevel: 'warn' });
  triton.bind({
    modelName: 'add_sub',
    inferFunc: batch((inputs: Record<string, Tensor>) => {
      const a = inputs.INPUT0!.data as Float32Array;
      const b = inputs.INPUT1!.data as Float32Array;
      const sum = new Float32Array(a.length);
      const diff = new Float32Array(a.length);
      for (let i = 0; i < a.length; i++) {
        sum[i] = a[i]! + b[i]!;
        diff[i] = a[i]! - b[i]!;
      }
      return { OUTPUT0: tensor('FP32', inputs.INPUT0!.shape, sum), OUTPUT1: tensor('FP32', inputs.INPUT0!.shape, diff) };
    }),
    inputs: [
      { name: 'INPUT0', dtype: 'FP32', shape: [16] },
      { name: 'INPUT1', dtype: 'FP32', shape: [16] },
    ],
    outputs: [
      { name: 'OUTPUT0', dtype: 'FP32', shape: [16] },
      { name: 'OUTPUT1', dtype: 'FP32', shape: [16] },
    ],
    config: { maxBatchSize: 64 },
  });
  triton.bind({
    modelName: 'identity',
    inferFunc: batch((inputs: Record<string, Tensor>) => ({ OUTPUT0: inputs.INPUT0! })),
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  triton.bind({
    modelName: 'mlp',
    inferFunc: onnxModel({ path: path.join(repoRoot(), 'test/fixtures/onnx/mlp_1024x4.onnx'), maxBatchSize: 64, intraOpNumThreads: 1 }),
  });
  process.exit(await triton.serve());
}

void main();
