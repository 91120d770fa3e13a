/** The models the ONNX benchmark serves and runs directly, and the inputs both sides get. */
import * as path from 'node:path';
import { ocrModelFiles } from '../../examples/ocr/ocr-model-files';
import { testValues } from '../harness/kserve';

export type ModelKey = 'cnn' | 'cnn32' | 'mlp' | 'rec';

export const MODEL_KEYS: readonly ModelKey[] = ['cnn', 'cnn32', 'mlp', 'rec'];

/** maxBatchSize of the served benchmark models. */
export const MAX_BATCH = 64;

export interface BenchModel {
  key: ModelKey;
  /** Model name on our server. */
  served: string;
  path: string;
  input: string;
  output: string;
  /** Input shape of one row (after the batch dim). */
  row: number[];
  describe: string;
  /**
   * The smallest batch the served ≥ 0.9× direct bar applies to: the compute-bound model's batches of 8 and
   * more, and the OCR recognizer. The other cells (small requests of a few milliseconds of work or less, and a
   * memory-bound model) carry no bar: they show what a request costs the server next to the model.
   */
  barFrom?: number;
}

export function benchModels(root: string): Record<ModelKey, BenchModel> {
  return {
    cnn: {
      key: 'cnn',
      served: 'cnn_bench',
      path: path.join(root, 'test', 'fixtures', 'onnx', 'cnn_64x4.onnx'),
      input: 'x',
      output: 'y',
      row: [3, 64, 64],
      describe:
        'cnn_64x4 (test/fixtures/onnx, compute-bound: 4 × 3×3 Conv+Relu, 32 channels, on 64×64 images, then a global average pool; ≈ 117 M multiply-adds and 48 KB of input per image)',
      barFrom: 8,
    },
    cnn32: {
      key: 'cnn32',
      served: 'cnn32_bench',
      path: path.join(root, 'test', 'fixtures', 'onnx', 'cnn_32x4.onnx'),
      input: 'x',
      output: 'y',
      row: [3, 32, 32],
      describe: 'cnn_32x4 (the same network on 32×32 images: ≈ 29 M multiply-adds, about half a millisecond per image)',
    },
    mlp: {
      key: 'mlp',
      served: 'mlp_bench',
      path: path.join(root, 'test', 'fixtures', 'onnx', 'mlp_1024x4.onnx'),
      input: 'x',
      output: 'y',
      row: [1024],
      describe: 'mlp_1024x4 (test/fixtures/onnx, 4 × 1024×1024 MatMul+Relu: memory-bound at small batches, each batch streams its 16 MB of weights)',
    },
    rec: {
      key: 'rec',
      served: 'rec_bench',
      path: ocrModelFiles().recognition,
      input: 'x',
      output: 'softmax_11.tmp_0',
      row: [3, 48, 320],
      describe: 'OCR recognizer (PP-OCRv4 rec, x [N,3,48,320] → [N,40,6625])',
      barFrom: 1,
    },
  };
}

/** The input of a batch: the same values on both sides. */
export function batchInput(model: BenchModel, batch: number): { shape: number[]; data: Float32Array } {
  const shape = [batch, ...model.row];
  return { shape, data: testValues(shape.reduce((a, b) => a * b, 1), 3) };
}

/** The session options of our ONNX instances (OnnxRunner.create with intraOpNumThreads: 1). */
export const SESSION_OPTIONS = {
  executionProviders: ['cpu'],
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
} as const;

/** A small fingerprint of an output, to check that both sides compute the same thing. */
export function fingerprint(data: Float32Array): { first: number[]; sum: number } {
  let sum = 0;
  for (let i = 0; i < data.length; i++) sum += data[i] as number;
  return { first: Array.from(data.subarray(0, 8)), sum };
}
