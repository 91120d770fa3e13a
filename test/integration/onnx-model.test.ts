import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { type Triton, onnxModel } from '../../lib';
import type { Model } from '../../lib/model';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

const fixture = (name: string) => path.join(__dirname, '../fixtures/onnx', name);

describe('ONNX models', () => {
  let triton: Triton;
  let base: string;

  beforeAll(async () => {
    // Tracked: stopped after the file even if this hook times out while the sessions load.
    triton = track(loopbackTriton());
    triton.bind({ modelName: 'matmul', inferFunc: onnxModel({ path: fixture('matmul_256.onnx'), maxBatchSize: 16, intraOpNumThreads: 1 }) });
    triton.bind({ modelName: 'mixed', inferFunc: onnxModel({ path: fixture('mixed_types.onnx'), intraOpNumThreads: 1 }) });
    triton.bind({ modelName: 'fixed', inferFunc: onnxModel({ path: fixture('fixed_shape.onnx'), intraOpNumThreads: 1 }) });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  });

  const getJson = async (p: string) => (await fetch(`${base}${p}`)).json() as Promise<Record<string, unknown>>;
  const infer = async (model: string, body: unknown) => {
    const res = await fetch(`${base}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as { outputs: { name: string; shape: number[]; data: unknown[] }[]; error?: string } };
  };

  it('derives inputs, outputs and batching from the model', async () => {
    const config = await getJson('/v2/models/mixed/config');
    expect(config).toMatchObject({ platform: 'onnxruntime_onnx', backend: 'onnxruntime', max_batch_size: 4, default_model_filename: 'mixed_types.onnx' });
    expect((config.input as { name: string; data_type: string; dims: number[] }[]).map((i) => [i.name, i.data_type, i.dims])).toEqual([
      ['ids', 'TYPE_INT64', [3]],
      ['mask', 'TYPE_BOOL', [3]],
      ['x', 'TYPE_FP64', [-1]],
      ['h', 'TYPE_FP16', [2]],
    ]);
    const fixed = await getJson('/v2/models/fixed/config');
    expect(fixed.max_batch_size).toBe(0);
    expect((fixed.input as { dims: number[] }[])[0]!.dims).toEqual([2, 3]);
    const meta = await getJson('/v2/models/matmul');
    expect(meta).toMatchObject({ platform: 'onnxruntime_onnx', inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 256] }] });
  });

  it('computes what onnxruntime computes directly', async () => {
    const x = Array.from({ length: 2 * 256 }, (_, i) => Math.fround(Math.sin(i)));
    const served = await infer('matmul', { inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 256], data: x }] });
    expect(served.status).toBe(200);
    // onnxruntime run directly, in a plain Node process (jest's sandbox and onnxruntime disagree on typed-array realms).
    const script = `const ort = require('onnxruntime-node');
      (async () => {
        const s = await ort.InferenceSession.create(process.argv[1]);
        const r = await s.run({ x: new ort.Tensor('float32', Float32Array.from(JSON.parse(process.argv[2])), [2, 256]) });
        process.stdout.write(JSON.stringify(Array.from(r.y.data)));
      })();`;
    const direct = JSON.parse(execFileSync(process.execPath, ['-e', script, fixture('matmul_256.onnx'), JSON.stringify(x)], { encoding: 'utf8', timeout: 20_000 })) as number[];
    expect(served.body.outputs[0]!.shape).toEqual([2, 256]);
    // JSON carries each FP32 output in the fewest digits that read back to it: compared as float32 values.
    expect(Array.from(Float32Array.from(served.body.outputs[0]!.data as number[]))).toEqual(direct);
  });

  it('runs INT64 beyond 2^53, BOOL, FP64 and FP16 through the model', async () => {
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: 'ids', datatype: 'INT64', shape: [1, 3], data: 'IDS' },
          { name: 'mask', datatype: 'BOOL', shape: [1, 3], data: [true, false, true] },
          { name: 'x', datatype: 'FP64', shape: [1, 2], data: [1.25, -3] },
          { name: 'h', datatype: 'FP16', shape: [1, 2], parameters: { binary_data_size: 4 } },
        ],
        outputs: [{ name: 'ids_out' }, { name: 'mask_out' }, { name: 'x_out' }, { name: 'h_out', parameters: { binary_data: true } }],
      }).replace('"IDS"', '[9007199254740993,-1,0]'), // a literal JS numbers cannot hold exactly
    );
    const h = Buffer.from(new Uint16Array([0x3c00, 0xc000]).buffer); // 1.0, -2.0 in FP16
    const res = await fetch(`${base}/v2/models/mixed/infer`, {
      method: 'POST',
      body: Buffer.concat([header, h]),
      headers: { 'Inference-Header-Content-Length': String(header.length) },
    });
    expect(res.status).toBe(200);
    const raw = Buffer.from(await res.arrayBuffer());
    const ihcl = Number(res.headers.get('inference-header-content-length'));
    const text = raw.subarray(0, ihcl).toString();
    expect(text).toContain('"data":[9007199254740994,0,1]');
    const json = JSON.parse(text) as { outputs: { name: string; data?: unknown[] }[] };
    expect(json.outputs.find((o) => o.name === 'mask_out')!.data).toEqual([false, true, false]);
    expect(json.outputs.find((o) => o.name === 'x_out')!.data).toEqual([2.5, -6]);
    expect([...raw.subarray(ihcl)]).toEqual([...h]);
  });

  it('batches concurrent requests inside the model', async () => {
    const row = Array.from({ length: 256 }, (_, i) => i / 256);
    const results = await Promise.all(Array.from({ length: 32 }, () => infer('matmul', { inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 256], data: row }] })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const first = JSON.stringify(results[0]!.body.outputs[0]!.data);
    expect(results.every((r) => JSON.stringify(r.body.outputs[0]!.data) === first)).toBe(true);
    const model: Model = triton.repository.get('matmul');
    const sizes = (model.statistics.toJson('matmul', '1').batch_stats as { batch_size: number }[]).map((b) => b.batch_size);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
  });

  it('rejects overrides that disagree with the model, naming the tensor', () => {
    const t = loopbackTriton({ allowHttp: false });
    const spec = onnxModel({ path: fixture('mixed_types.onnx') });
    expect(() => t.bind({ modelName: 'a', inferFunc: spec, inputs: [{ name: 'ids', dtype: 'INT32', shape: [3] }, { name: 'mask', dtype: 'BOOL', shape: [3] }, { name: 'x', dtype: 'FP64', shape: [-1] }, { name: 'h', dtype: 'FP16', shape: [2] }] })).toThrow(
      /input 'ids' is INT64 in the model, not INT32/,
    );
    expect(() => t.bind({ modelName: 'b', inferFunc: spec, outputs: [{ name: 'nope', dtype: 'FP32', shape: [1] }] })).toThrow(/the model has 4 outputs/);
    expect(() => t.bind({ modelName: 'c', inferFunc: onnxModel({ path: fixture('fixed_shape.onnx') }), config: { batching: true } })).toThrow(
      /batching needs a symbolic first dim/,
    );
    expect(() => onnxModel({ path: fixture('nope.onnx') })).toThrow(/cannot read ONNX model/);
  });
});
