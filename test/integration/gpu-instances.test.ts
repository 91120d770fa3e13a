// GPU instances where there is no GPU (CI): a repository's KIND_GPU groups and gpu_execution_accelerator are read
// and honoured, the config reports the accelerator and the provider its instances report, and a GPU instance that
// no provider can run fails its load with the message that names the providers. This machine has neither CUDA
// libraries nor a Vulkan adapter; scripts/gpu-check.sh runs the GPU side on a machine that has one.
import * as path from 'node:path';
import { type Triton, workers, type TritonConfigInit } from '../../lib';
import { ModelClient } from '../../lib/client';
import { parseModelConfigText } from '../../lib/config/model-config-text';
import { formatModelConfigText } from '../../lib/config/model-config-text';
import { scanRepositories } from '../../lib/repository/model-folder';
import { repositoryModel } from '../../lib/repository/repository-binding';
import { track } from '../helpers/resources';
import { ScratchRepository, indexEntry } from '../helpers/scratch-repository';
import { loopbackTriton } from '../helpers/loopback-triton';

const IDENTITY = path.join(__dirname, '../fixtures/onnx/identity_fp32.onnx');
const REPORTING = path.join(__dirname, '../fixtures/workers/report-provider-model.js');

const WEBGPU = 'optimization { execution_accelerators { gpu_execution_accelerator [ { name: "webgpu" } ] } }';
const config = (groups: string, extra = '') => `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninstance_group [ ${groups} ]\n${extra}\n`;

describe('GPU instances without a GPU', () => {
  let repo: ScratchRepository;
  let triton: Triton | undefined;
  let base: string;

  beforeEach(() => {
    repo = new ScratchRepository('tstriton-gpu-');
  });

  afterEach(async () => {
    await triton?.stop();
    triton = undefined;
    repo.close();
  });

  const model = (name: string, text: string) => repo.model(name, IDENTITY, text);

  async function start(settings: TritonConfigInit = {}, before?: (t: Triton) => void): Promise<Triton> {
    triton = track(loopbackTriton(settings));
    before?.(triton);
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
    return triton;
  }
  const reasonOf = (name: string) => indexEntry(base, name);
  const configOf = async (name: string) => (await (await fetch(`${base}/v2/models/${name}/config`)).json()) as Record<string, unknown>;

  /** The config JSON a repository model is served with once it loads (the server builds it the same way). */
  async function configJsonOf(name: string): Promise<Record<string, unknown>> {
    const folder = scanRepositories([repo.root]).folders.get(name);
    if (!folder) throw new Error(`no folder ${name}`);
    const file = path.join(folder.dir, 'config.pbtxt');
    const binding = repositoryModel(folder, parseModelConfigText(folder.configText as string, file), file, false).bindings[0];
    const offline = loopbackTriton({ allowHttp: false });
    try {
      return offline.bind(binding as Parameters<Triton['bind']>[0]).configJson;
    } finally {
      await offline.stop();
    }
  }

  it('reads KIND_GPU with the webgpu accelerator as a gpu:0 instance on WebGPU, reports both, and fails its load naming WebGPU', async () => {
    model('on_gpu', config('{ kind: KIND_GPU gpus: [ 0 ] count: 1 }', WEBGPU));
    model('on_cpu', config('{ kind: KIND_CPU count: 2 }', WEBGPU));

    // The config the GPU model is served with: its group, and the provider the accelerator names.
    const json = await configJsonOf('on_gpu');
    expect(json.instance_group).toEqual([expect.objectContaining({ kind: 'KIND_GPU', count: 1, gpus: [0] })]);
    expect((json.optimization as Record<string, unknown>).execution_accelerators).toEqual({
      gpu_execution_accelerator: [{ name: 'webgpu', parameters: {} }],
      cpu_execution_accelerator: [],
    });
    expect(formatModelConfigText(json)).toMatch(/execution_accelerators \{\s+gpu_execution_accelerator \{\s+name: "webgpu"\s+\}\s+\}/);

    await start({ modelRepository: [repo.root] });
    // No GPU here: WebGPU, which the accelerator forces, finds no adapter; CUDA is not tried.
    const failed = await reasonOf('on_gpu');
    expect(failed?.state).toBe('UNAVAILABLE');
    expect(failed?.reason).toContain('on gpu:0: the WebGPU execution provider (gpuExecutionProvider \'webgpu\') cannot start');
    expect(failed?.reason).toContain('libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libgles2 libopengl0');
    expect(failed?.reason).not.toContain('CUDA:');
    // A model with CPU instances takes the accelerator (it names what GPU instances would run on) and serves.
    expect((await reasonOf('on_cpu'))?.state).toBe('READY');
    const served = await configOf('on_cpu');
    expect(served.instance_group).toEqual([expect.objectContaining({ kind: 'KIND_CPU', count: 2, gpus: [] })]);
    expect((served.optimization as Record<string, unknown>).execution_accelerators).toEqual({
      gpu_execution_accelerator: [{ name: 'webgpu', parameters: {} }],
      cpu_execution_accelerator: [],
    });
  });

  it('refuses WebGPU on gpu:1, and cuda with webgpu, with the field and the reason', async () => {
    model('second_gpu', config('{ kind: KIND_GPU gpus: [ 1 ] }', WEBGPU));
    model('both', config('{ kind: KIND_GPU gpus: [ 0 ] }', 'optimization { execution_accelerators { gpu_execution_accelerator [ { name: "cuda" }, { name: "webgpu" } ] } }'));
    model('unknown', config('{ kind: KIND_GPU gpus: [ 0 ] }', 'optimization { execution_accelerators { gpu_execution_accelerator [ { name: "vulkan" } ] } }'));
    await start({ modelRepository: [repo.root] });
    const second = await reasonOf('second_gpu');
    expect(second?.state).toBe('UNAVAILABLE');
    expect(second?.reason).toContain('the WebGPU execution provider runs on the first GPU only');
    expect(second?.reason).toContain('does not serve gpu:1');
    expect((await reasonOf('both'))?.reason).toMatch(/gpu_execution_accelerator.*'webgpu' cannot go with 'cuda' or 'tensorrt'/);
    expect((await reasonOf('unknown'))?.reason).toMatch(/'vulkan' is not an onnxruntime execution provider tstriton can use on a GPU \(tensorrt, cuda, webgpu\)/);
  });

  it('takes the server\'s gpuExecutionProvider for a KIND_GPU group that names none', async () => {
    model('plain_gpu', config('{ kind: KIND_GPU gpus: [ 0 ] }'));
    model('own_cuda', config('{ kind: KIND_GPU gpus: [ 0 ] }', 'optimization { execution_accelerators { gpu_execution_accelerator [ { name: "cuda" } ] } }'));
    await start({ modelRepository: [repo.root], gpuExecutionProvider: 'webgpu' });
    expect((await reasonOf('plain_gpu'))?.reason).toContain("the WebGPU execution provider (gpuExecutionProvider 'webgpu') cannot start");
    // The model's own accelerator wins over the server's setting.
    const own = (await reasonOf('own_cuda'))?.reason;
    expect(own).toContain("the CUDA execution provider (gpuExecutionProvider 'cuda') cannot start");
    expect(own).toContain('CUDA 12 and cuDNN 9');
  });

  it('with auto, fails a gpu:0 instance naming both providers and what each needs', async () => {
    model('auto_gpu', config('{ kind: KIND_GPU gpus: [ 0 ] }'));
    await start({ modelRepository: [repo.root] });
    const reason = (await reasonOf('auto_gpu'))?.reason;
    expect(reason).toContain('on gpu:0: neither GPU execution provider (CUDA, WebGPU) can start');
    expect(reason).toMatch(/CUDA: .*; it needs onnxruntime-node's CUDA provider libraries/);
    expect(reason).toMatch(/WebGPU: .*; it needs the Vulkan and GL loaders/);
    expect(reason).toContain('NVIDIA_DRIVER_CAPABILITIES must include graphics');
  });

  it('reports the provider each GPU instance says it got, once the instances run', async () => {
    const spec = workers({ module: REPORTING, devices: ['gpu:0', 'gpu:0', 'cpu'], data: { provider: 'webgpu' } });
    let before: Record<string, unknown> | undefined;
    await start({ allowGrpc: true }, (t) => {
      const bound = t.bind({ modelName: 'reporting', inferFunc: spec, outputs: [{ name: 'provider', dtype: 'BYTES', shape: [1] }], config: { batching: false } });
      before = bound.configJson;
    });
    // Before the instances start, nothing names a provider.
    expect((before?.optimization as Record<string, unknown>).execution_accelerators).toBeUndefined();
    const served = await configOf('reporting');
    expect(served.instance_group).toEqual([
      expect.objectContaining({ kind: 'KIND_CPU', count: 1 }),
      expect.objectContaining({ kind: 'KIND_GPU', count: 2, gpus: [0] }),
    ]);
    expect((served.optimization as Record<string, unknown>).execution_accelerators).toEqual({
      gpu_execution_accelerator: [{ name: 'webgpu', parameters: {} }],
      cpu_execution_accelerator: [],
    });
    // gRPC's ModelConfig carries it too (Triton's ExecutionAccelerators message).
    const client = new ModelClient(`grpc://127.0.0.1:${(triton as Triton).ports.grpc}`, 'reporting');
    try {
      const config = await client.modelConfig();
      expect((config.optimization as Record<string, unknown>).execution_accelerators).toMatchObject({ gpu_execution_accelerator: [{ name: 'webgpu' }] });
    } finally {
      client.close();
    }
  });
});
