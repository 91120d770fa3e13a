/**
 * Our server for the scheduler benchmark, HTTP only, with every model the benchmark measures bound at once
 * (an idle model costs nothing; each is measured alone):
 * - `mlp_b64` / `mlp_b1`: the compute-bound ONNX model served with maxBatchSize 64 / 1 (one worker each);
 * - `spin_x1` / `spin_x2`: the CPU-loop worker callable with 1 / 2 worker instances;
 * - `identity_batched` / `identity_unbatched`: an in-process identity with the dynamic batcher on / off;
 * - `identity_fp32`: the identity ONNX model in a worker instance.
 */
import { onnxModel, workers } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { runTritonChild } from '../harness/triton-child';

/** What the orchestrator passes as argv[2] (JSON). */
export interface OursConfig {
  mlpPath: string;
  identityPath: string;
  spinModule: string;
  spinIterations: number;
  spinMaxBatchSize: number;
}

runTritonChild('http', (triton) => {
  const cfg = JSON.parse(process.argv[2] ?? '{}') as OursConfig;
  for (const maxBatchSize of [64, 1]) {
    triton.bind({ modelName: `mlp_b${maxBatchSize}`, inferFunc: onnxModel({ path: cfg.mlpPath, maxBatchSize, intraOpNumThreads: 1 }) });
  }
  for (const count of [1, 2]) {
    triton.bind({
      modelName: `spin_x${count}`,
      inferFunc: workers({ module: cfg.spinModule, devices: Array.from({ length: count }, () => 'cpu'), data: { iterations: cfg.spinIterations } }),
      inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [1] }],
      config: { maxBatchSize: cfg.spinMaxBatchSize },
    });
  }
  const identity = batch(async (inputs) => ({ OUTPUT0: inputs.INPUT0! }));
  for (const [name, batcher] of [['identity_batched', {}], ['identity_unbatched', null]] as const) {
    triton.bind({
      modelName: name,
      inferFunc: identity,
      inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 64, batcher },
      strict: true,
    });
  }
  triton.bind({ modelName: 'identity_fp32', inferFunc: onnxModel({ path: cfg.identityPath, maxBatchSize: 64, intraOpNumThreads: 1 }) });
});
