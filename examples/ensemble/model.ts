import * as path from 'node:path';
import { ensemble, onnxModel, tensor, type Tensor, type Triton } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { decodeImage, resizeBilinear } from '../ocr/image';

const LABELS = ['red', 'green', 'blue'];
const SIZE = 32;

/**
 * Binds the classic three-step ensemble: `color_preprocess` (encoded image → [3,32,32] pixels in [0,1]),
 * `color_classifier` (an ONNX model: pixels → logits) and `color_postprocess` (logits → label and score),
 * tied together as `color_ensemble`: clients send one request and get the label back, and the tensors move
 * between the steps in memory.
 */
export function bindColorEnsemble(triton: Triton): void {
  triton.bind({
    modelName: 'color_preprocess',
    inferFunc: batch(async ({ IMAGE }: Record<string, Tensor>) => {
      const images = (IMAGE as Tensor<'BYTES'>).data;
      const out = new Float32Array(images.length * 3 * SIZE * SIZE);
      images.forEach((bytes, n) => {
        const small = resizeBilinear(decodeImage(bytes), SIZE, SIZE);
        for (let i = 0; i < SIZE * SIZE; i++) {
          for (let c = 0; c < 3; c++) out[((n * 3 + c) * SIZE * SIZE) + i] = small.data[i * 3 + c]! / 255;
        }
      });
      return { PIXELS: tensor('FP32', [images.length, 3, SIZE, SIZE], out) };
    }),
    inputs: [{ name: 'IMAGE', dtype: 'BYTES', shape: [1] }],
    outputs: [{ name: 'PIXELS', dtype: 'FP32', shape: [3, SIZE, SIZE] }],
    config: { maxBatchSize: 8 },
  });
  triton.bind({
    modelName: 'color_classifier',
    inferFunc: onnxModel({ path: path.join(__dirname, 'color_classifier.onnx'), maxBatchSize: 8, intraOpNumThreads: 1 }),
    config: { maxBatchSize: 8 },
  });
  triton.bind({
    modelName: 'color_postprocess',
    inferFunc: batch(async ({ LOGITS }: Record<string, Tensor>) => {
      const logits = LOGITS!.data as Float32Array;
      const rows = LOGITS!.shape[0]!;
      const labels: string[] = [];
      const scores = new Float32Array(rows);
      for (let r = 0; r < rows; r++) {
        const row = logits.subarray(r * 3, r * 3 + 3);
        const best = row.indexOf(Math.max(...row));
        const exp = Array.from(row, (v) => Math.exp(v - row[best]!));
        labels.push(LABELS[best]!);
        scores[r] = 1 / exp.reduce((a, b) => a + b, 0);
      }
      return { LABEL: tensor('BYTES', [rows, 1], labels), SCORE: tensor('FP32', [rows, 1], scores) };
    }),
    inputs: [{ name: 'LOGITS', dtype: 'FP32', shape: [3] }],
    outputs: [
      { name: 'LABEL', dtype: 'BYTES', shape: [1] },
      { name: 'SCORE', dtype: 'FP32', shape: [1] },
    ],
    config: { maxBatchSize: 8 },
  });
  triton.bind({
    modelName: 'color_ensemble',
    inferFunc: ensemble({
      steps: [
        { modelName: 'color_preprocess', inputMap: { IMAGE: 'IMAGE' }, outputMap: { PIXELS: 'pixels' } },
        { modelName: 'color_classifier', inputMap: { pixels: 'pixels' }, outputMap: { logits: 'logits' } },
        { modelName: 'color_postprocess', inputMap: { LOGITS: 'logits' }, outputMap: { LABEL: 'LABEL', SCORE: 'SCORE' } },
      ],
    }),
    inputs: [{ name: 'IMAGE', dtype: 'BYTES', shape: [1] }],
    outputs: [
      { name: 'LABEL', dtype: 'BYTES', shape: [1] },
      { name: 'SCORE', dtype: 'FP32', shape: [1] },
    ],
    config: { maxBatchSize: 8 },
  });
}
