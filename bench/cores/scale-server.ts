/**
 * A server of the many-core comparison (scale.ts), HTTP only, as bench:http runs ours: either `identity_fp32`
 * in-process as examples/identity/model.ts binds it, or `mlp` (test/fixtures/onnx/mlp_1024x4.onnx) as an
 * `onnxModel` with `instances` worker instances of one intra-op thread each and `maxBatchSize: 64`; on `threads`
 * front-end threads (`httpThreadCount`; 1, set explicitly, serves the port on the main thread).
 */
import * as path from 'node:path';
import { onnxModel } from 'tstriton';
import { bindIdentity } from '../../examples/identity/model';
import { repoRoot } from '../harness/repo-root';
import { runTritonChild } from '../harness/triton-child';

/** What the runner passes as argv[2] (JSON). `threads` is the server's `httpThreadCount`. */
export type ScaleServerConfig = { model: 'identity'; threads: number } | { model: 'mlp'; instances: number; threads: number };

/** The mlp model's file. */
export const MLP_PATH = path.join(repoRoot(__dirname), 'test', 'fixtures', 'onnx', 'mlp_1024x4.onnx');

if (require.main === module) {
  const cfg = JSON.parse(process.argv[2] ?? '{}') as ScaleServerConfig;
  const expected = `expected a config { model: 'identity' | 'mlp', instances? (mlp), threads }, got ${process.argv[2]}`;
  runTritonChild(
    'http',
    (triton) => {
      // runTritonChild checks `threads` too; absent, it would default to 1, and this runner always says.
      if (cfg.threads === undefined) throw new Error(expected);
      if (cfg.model === 'identity') bindIdentity(triton);
      else if (cfg.model === 'mlp' && Number.isInteger(cfg.instances) && cfg.instances >= 1) {
        const devices = Array.from({ length: cfg.instances }, () => 'cpu');
        triton.bind({ modelName: 'mlp', inferFunc: onnxModel({ path: MLP_PATH, devices, maxBatchSize: 64, intraOpNumThreads: 1 }) });
      } else throw new Error(expected);
    },
    { httpThreadCount: cfg.threads },
  );
}
