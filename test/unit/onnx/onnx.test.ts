import * as path from 'node:path';
import { isBatchable, readOnnxSignature } from '../../../lib/onnx/onnx-signature';
import { OnnxRunner, executionProvidersFor } from '../../../lib/onnx/onnx-runner';

const fixture = (name: string) => path.join(__dirname, '../../fixtures/onnx', name);

describe('readOnnxSignature', () => {
  it('reads names, dtypes and dims; symbolic dims become -1', () => {
    const sig = readOnnxSignature(fixture('mixed_types.onnx'));
    expect(sig.inputs.map((t) => [t.name, t.dtype, t.dims])).toEqual([
      ['ids', 'INT64', [-1, 3]],
      ['mask', 'BOOL', [-1, 3]],
      ['x', 'FP64', [-1, -1]],
      ['h', 'FP16', [-1, 2]],
    ]);
    expect(sig.outputs.map((t) => t.name)).toEqual(['ids_out', 'mask_out', 'x_out', 'h_out']);
    expect(isBatchable(sig)).toBe(true);
  });

  it('leaves initializers out of the inputs and sees fixed shapes as not batchable', () => {
    const mm = readOnnxSignature(fixture('matmul_256.onnx'));
    expect(mm.inputs.map((t) => t.name)).toEqual(['x']);
    expect(mm.outputs[0]).toMatchObject({ name: 'y', dtype: 'FP32', dims: [-1, 256] });
    const fixed = readOnnxSignature(fixture('fixed_shape.onnx'));
    expect(fixed.inputs[0]!.dims).toEqual([2, 3]);
    expect(isBatchable(fixed)).toBe(false);
  });

  it('rejects files that are not ONNX models with a clear error', () => {
    expect(() => readOnnxSignature(fixture('missing.onnx'))).toThrow(/cannot read ONNX model .*missing\.onnx/);
    expect(() => readOnnxSignature(Buffer.from('definitely not protobuf \x00\xff\xff'))).toThrow(/not an ONNX model|has no graph/);
  });
});

describe('devices', () => {
  it('selects the CUDA execution provider with the device id for gpu devices, CPU otherwise', () => {
    expect(executionProvidersFor({ kind: 'gpu', id: 1 })).toEqual([{ name: 'cuda', deviceId: 1 }]);
    expect(executionProvidersFor({ kind: 'cpu', id: 0 })).toEqual(['cpu']);
    expect(executionProvidersFor({ kind: 'gpu', id: 0 }, ['tensorrt'])).toEqual(['tensorrt', { name: 'cuda', deviceId: 0 }]);
  });

  it('fails to load on a GPU without CUDA with an error that says how to install it', async () => {
    const err = await OnnxRunner.create(
      { path: fixture('fixed_shape.onnx'), batching: false, outputs: [{ name: 'y', dtype: 'FP32' }], intraOpNumThreads: 1 },
      { kind: 'gpu', id: 0 },
    ).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('cannot run');
    expect((err as Error).message).toContain('--onnxruntime-node-install=cuda12');
  });
});
