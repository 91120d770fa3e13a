// The mlp scripts/gpu-check.sh writes on the GPU machine (no Python there): a valid ONNX model that onnxruntime
// runs and tstriton reads, computing what its weights say, in FP32 and FP16.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readOnnxSignature } from '../../../lib/onnx/onnx-signature';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { mlpModel, random, toHalf, fromHalf } = require('../../../scripts/gpu-check/onnx-mlp.js') as {
  mlpModel(width: number, layers: number, precision: 'fp32' | 'fp16', seed?: number): Buffer;
  random(seed: number): () => number;
  toHalf(value: number): number;
  fromHalf(bits: number): number;
};

/** The model's output by the book: the same weights from the same generator, relu(x @ W) per layer. */
function reference(x: Float32Array, rows: number, width: number, layers: number, round: (v: number) => number): Float32Array {
  const next = random(1);
  const scale = Math.sqrt(3 / width);
  let h = x;
  for (let l = 0; l < layers; l++) {
    const w = new Float64Array(width * width);
    for (let i = 0; i < w.length; i++) w[i] = round((next() * 2 - 1) * scale);
    const out = new Float32Array(rows * width);
    for (let r = 0; r < rows; r++) {
      for (let j = 0; j < width; j++) {
        let sum = 0;
        for (let k = 0; k < width; k++) sum += (h[r * width + k] as number) * (w[k * width + j] as number);
        out[r * width + j] = Math.max(0, sum);
      }
    }
    h = out;
  }
  return h;
}

/**
 * Runs the model on onnxruntime's CPU provider in a node process of its own (onnxruntime-node's tensors check
 * their typed arrays against that realm's constructors, which jest's sandbox does not share); FP16 travels as bits.
 */
function run(model: Buffer, x: number[], rows: number, width: number, fp16: boolean): number[] {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-check-mlp-'));
  try {
    const file = join(dir, 'model.onnx');
    writeFileSync(file, model);
    const script = `
      const ort = require('onnxruntime-node');
      const [file, rows, width, fp16, x] = process.argv.slice(1);
      const dims = [Number(rows), Number(width)];
      const data = JSON.parse(x);
      const input = fp16 === '1'
        ? Object.assign(new ort.Tensor('uint16', Uint16Array.from(data), dims), { type: 'float16' })
        : new ort.Tensor('float32', Float32Array.from(data), dims);
      ort.InferenceSession.create(file, { executionProviders: ['cpu'] }).then(async (s) => {
        const { y } = await s.run({ x: input });
        const d = y.data;
        const out = fp16 === '1' ? new Uint16Array(d.buffer, d.byteOffset, d.length) : d;
        process.stdout.write(JSON.stringify({ dims: y.dims, data: Array.from(out) }));
      });`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script, file, String(rows), String(width), fp16 ? '1' : '0', JSON.stringify(x)], { cwd: join(__dirname, '../../..'), encoding: 'utf8' })) as { dims: number[]; data: number[] };
    expect(out.dims).toEqual([rows, width]);
    return out.data;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('scripts/gpu-check/onnx-mlp.js', () => {
  const width = 48;
  const layers = 3;
  const rows = 5;
  const x = Float32Array.from({ length: rows * width }, (_, i) => Math.sin(i));

  it('writes an FP32 mlp that onnxruntime runs as its weights say, with a batch dim tstriton sees', () => {
    const file = mlpModel(width, layers, 'fp32');
    expect(readOnnxSignature(file).inputs).toEqual([expect.objectContaining({ name: 'x', dtype: 'FP32', dims: [-1, width] })]);
    const got = run(file, Array.from(x), rows, width, false);
    const want = reference(x, rows, width, layers, (v) => Math.fround(v));
    for (let i = 0; i < want.length; i++) expect(Math.abs((got[i] as number) - (want[i] as number))).toBeLessThan(1e-5);
    expect(want.some((v) => v > 0.01)).toBe(true);
  });

  it('writes the same mlp in FP16', () => {
    expect(fromHalf(toHalf(0.1))).toBeCloseTo(0.1, 3);
    expect(fromHalf(toHalf(-1e-6))).toBeCloseTo(-1e-6, 7);
    const file = mlpModel(width, layers, 'fp16');
    expect(readOnnxSignature(file).inputs[0]).toMatchObject({ name: 'x', dtype: 'FP16' });
    const bits = Array.from(x, (v) => toHalf(v));
    const half = run(file, bits, rows, width, true);
    const want = reference(Float32Array.from(bits, fromHalf), rows, width, layers, (v) => fromHalf(toHalf(v)));
    for (let i = 0; i < want.length; i++) expect(Math.abs(fromHalf(half[i] as number) - (want[i] as number))).toBeLessThan(0.02 * Math.max(1, Math.abs(want[i] as number)));
    expect(want.some((v) => v > 0.01)).toBe(true);
  });
});
