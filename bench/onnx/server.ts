/**
 * Our server for the ONNX benchmark, HTTP only: the two benchmark models as `onnxModel` worker instances with one
 * intra-op thread and no dynamic batcher (each request runs alone, so a batch is exactly the request's batch), and
 * the OCR example (`bindOcr`: ocr_det, ocr_rec and the `ocr` pipeline, one intra-op thread per model).
 */
import { onnxModel } from 'tstriton';
import { bindOcr } from '../../examples/ocr/model';
import { repoRoot } from '../harness/repo-root';
import { runTritonChild } from '../harness/triton-child';
import { benchModels, MAX_BATCH } from './models';

runTritonChild('http', (triton) => {
  for (const m of Object.values(benchModels(repoRoot()))) {
    triton.bind({
      modelName: m.served,
      inferFunc: onnxModel({ path: m.path, maxBatchSize: MAX_BATCH, intraOpNumThreads: 1 }),
      config: { batcher: null },
    });
  }
  bindOcr(triton, { threads: 1 });
});
