import * as path from 'node:path';
import { isBatchable, readOnnxSignature } from '../../../lib/onnx/onnx-signature';
import { TritonError } from '../../../lib/base/errors';
import { OnnxRunner, executionProvidersFor, type OnnxRunnerSettings } from '../../../lib/onnx/onnx-runner';

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
  it('selects the GPU provider (CUDA with the device id, or WebGPU) for gpu devices, CPU otherwise', () => {
    expect(executionProvidersFor({ kind: 'gpu', id: 1 })).toEqual([{ name: 'cuda', deviceId: 1 }]);
    expect(executionProvidersFor({ kind: 'cpu', id: 0 })).toEqual(['cpu']);
    expect(executionProvidersFor({ kind: 'gpu', id: 0 }, ['tensorrt'])).toEqual(['tensorrt', { name: 'cuda', deviceId: 0 }]);
    expect(executionProvidersFor({ kind: 'gpu', id: 0 }, [], 'webgpu')).toEqual([{ name: 'webgpu' }]);
    expect(executionProvidersFor({ kind: 'cpu', id: 0 }, [], 'webgpu')).toEqual(['cpu']);
  });

  // This machine has neither CUDA libraries nor a Vulkan adapter (CI has no GPU).
  const settings = { path: fixture('fixed_shape.onnx'), batching: false, outputs: [{ name: 'y', dtype: 'FP32' as const }], intraOpNumThreads: 1 };
  const failure = (extra: Partial<OnnxRunnerSettings>, id = 0) =>
    OnnxRunner.create({ ...settings, ...extra }, { kind: 'gpu', id }).then(
      async (runner) => {
        await runner.release();
        throw new Error(`gpu:${id} started on ${runner.executionProvider}; this test needs a machine without a GPU`);
      },
      (e: Error) => e,
    );

  it('fails gpu:0 without CUDA or WebGPU with one message naming both providers and what each needs', async () => {
    const err = await failure({});
    expect(err).toBeInstanceOf(TritonError);
    const message = err.message;
    expect(message).toContain(`cannot run '${settings.path}' on gpu:0: neither GPU execution provider (CUDA, WebGPU) can start`);
    expect(message).toMatch(/CUDA: .*Failed to load shared library; it needs /);
    expect(message).toContain('ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node');
    expect(message).toContain('CUDA 12 and cuDNN 9');
    expect(message).toMatch(/WebGPU: .*adapter.*; it needs /);
    expect(message).toContain('libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libgles2 libopengl0');
    expect(message).toContain('NVIDIA_DRIVER_CAPABILITIES must include graphics');
    // onnxruntime's source locations and checks stay out of it.
    expect(message).not.toContain('onnxruntime_src');
    expect(message).not.toContain('was false');
  });

  it('names only the provider the setting forces', async () => {
    const webgpu = (await failure({ gpuExecutionProvider: 'webgpu' })).message;
    expect(webgpu).toContain("the WebGPU execution provider (gpuExecutionProvider 'webgpu') cannot start");
    expect(webgpu).toContain('libvulkan1');
    expect(webgpu).not.toContain('CUDA:');
    const cuda = (await failure({ gpuExecutionProvider: 'cuda' })).message;
    expect(cuda).toContain("the CUDA execution provider (gpuExecutionProvider 'cuda') cannot start");
    expect(cuda).not.toContain('WebGPU:');
  });

  it('does not take WebGPU for gpu:N with N > 0: onnxruntime-node cannot choose the adapter', async () => {
    const message = (await failure({}, 1)).message;
    expect(message).toContain('cannot run');
    expect(message).toContain('on gpu:1');
    expect(message).toMatch(/CUDA: .*; it needs /);
    expect(message).toContain('WebGPU: the WebGPU execution provider runs on the first GPU only');
    expect(message).toContain('NVIDIA_VISIBLE_DEVICES=1');
  });

  it('reports a broken model as such, not as a missing provider', async () => {
    const err = await OnnxRunner.create({ ...settings, path: fixture('missing.onnx'), gpuExecutionProvider: 'webgpu' }, { kind: 'cpu', id: 0 }).catch((e: Error) => e);
    expect((err as Error).message).toMatch(/^cannot load ONNX model .*missing\.onnx/);
  });
});
