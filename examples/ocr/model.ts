import { onnxModel, tensor, TritonError, type Request, type Tensor, type Triton } from 'tstriton';
import { loadCharset } from './charset';
import { decodeImage } from './image';
import { ocrModelFiles } from './ocr-model-files';
import { runOcr, type OcrModels } from './ocr-pipeline';

/** Output names of the PP-OCRv4 models. */
const DET_OUTPUT = 'sigmoid_0.tmp_0';
const REC_OUTPUT = 'softmax_11.tmp_0';

/**
 * Binds the OCR models: `ocr_det` and `ocr_rec` (the PP-OCRv4 ONNX models, one worker instance each, batching)
 * and `ocr`, a pipeline model that decodes an image, runs detection, stops early when there is no text, and
 * recognizes each region — its model calls go through `ocr_det`'s and `ocr_rec`'s schedulers, so concurrent
 * pipeline requests batch inside them.
 */
export function bindOcr(triton: Triton, options: { threads?: number; pipelineInstances?: number } = {}): void {
  const files = ocrModelFiles();
  const charset = loadCharset(files.dictionary);
  triton.bind({
    modelName: 'ocr_det',
    inferFunc: onnxModel({ path: files.detection, maxBatchSize: 4, intraOpNumThreads: options.threads ?? 1 }),
    config: { maxBatchSize: 4, batcher: { maxQueueDelayMicroseconds: 2000 } },
  });
  triton.bind({
    modelName: 'ocr_rec',
    inferFunc: onnxModel({ path: files.recognition, intraOpNumThreads: options.threads ?? 1 }),
    config: { maxBatchSize: 32, batcher: { maxQueueDelayMicroseconds: 2000 } },
  });
  const pipeline = (requests: Request[]) => Promise.all(requests.map((r) => readImage(r, charset)));
  triton.bind({
    modelName: 'ocr',
    // The pipeline mostly waits on its model calls: several in-process instances let requests overlap, so
    // their detection and recognition calls meet (and batch) in ocr_det's and ocr_rec's queues.
    inferFunc: Array.from({ length: options.pipelineInstances ?? 8 }, () => pipeline),
    inputs: [{ name: 'IMAGE', dtype: 'BYTES', shape: [1] }],
    outputs: [
      { name: 'TEXTS', dtype: 'BYTES', shape: [-1] },
      { name: 'BOXES', dtype: 'FP32', shape: [-1, 4] },
    ],
    config: { batching: false },
  });
}

async function readImage(request: Request, charset: readonly string[]) {
  const bytes = (request.inputs.IMAGE as Tensor<'BYTES'>).data[0];
  if (!bytes || bytes.length === 0) throw new TritonError('INVALID_ARGUMENT', "input 'IMAGE' is empty: send one encoded PNG or JPEG");
  const image = decodeImage(bytes);
  const call = async (modelName: string, output: string, x: Tensor<'FP32'>, signal?: AbortSignal) => {
    const outputs = await request.infer!({ modelName, inputs: { x }, requestedOutputs: [output], signal });
    return outputs[output] as Tensor<'FP32'>;
  };
  const models: OcrModels = {
    detect: (x, o) => call('ocr_det', DET_OUTPUT, x, o.signal),
    recognize: (x, o) => call('ocr_rec', REC_OUTPUT, x, o.signal),
  };
  const { regions } = await runOcr(image, models, charset, { signal: request.signal });
  return {
    TEXTS: tensor('BYTES', [regions.length], regions.map((r) => r.text)),
    BOXES: tensor('FP32', [regions.length, 4], Float32Array.from(regions.flatMap((r) => r.box))),
  };
}
