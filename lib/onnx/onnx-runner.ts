import type * as ort from 'onnxruntime-node';
import type { Request, Response } from '../callable/callable';
import type { GpuExecutionProvider } from '../config/triton-config';
import { TritonError, invalidArgument } from '../base/errors';
import type { Device } from '../instances/instance';
import { DTYPES, type DataType, type TensorData } from '../tensor/dtype';
import { concatBatch, sliceBatch, type Tensor } from '../tensor/tensor';
import { loadOrt, type OrtModule } from './load-ort';
import type { OnnxExecutionMode, OnnxGraphOptimizationLevel } from './onnx-session-options';

/** Settings of one ONNX session, carried into its worker as `context.data`. */
export interface OnnxRunnerSettings {
  path: string;
  /** Whether dim 0 of every input and output is the batch dim. */
  batching: boolean;
  /** Output names and dtypes, in model order. */
  outputs: { name: string; dtype: DataType }[];
  intraOpNumThreads: number;
  interOpNumThreads?: number;
  executionMode?: OnnxExecutionMode;
  graphOptimizationLevel?: OnnxGraphOptimizationLevel;
  enableCpuMemArena?: boolean;
  enableMemPattern?: boolean;
  /** onnxruntime session config entries (`session.intra_op.allow_spinning`). */
  sessionConfig?: Record<string, string>;
  /** Extra execution providers to try before the device's (advanced). */
  executionProviders?: string[];
  /** What a GPU instance runs on: `auto` (the default) tries CUDA, then WebGPU. */
  gpuExecutionProvider?: GpuExecutionProvider;
  /** Tensors whose dims differ between the client (`served`) and the model (`model`), without the batch dim. */
  reshape?: Record<string, { served: number[]; model: number[] }>;
}

/** The onnxruntime execution providers a GPU instance can run on, in the order `auto` tries them. */
export const GPU_PROVIDERS = ['cuda', 'webgpu'] as const;
/** A GPU instance's execution provider. */
export type GpuProvider = (typeof GPU_PROVIDERS)[number];

/** What the CUDA execution provider needs, for the error a GPU instance fails with. */
export const CUDA_NEEDS =
  "onnxruntime-node's CUDA provider libraries (`ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node` downloads them) and CUDA 12 and cuDNN 9 libraries on the library path";

/** What the WebGPU execution provider (Dawn over Vulkan, bundled with onnxruntime-node on Linux x64) needs. */
export const WEBGPU_NEEDS =
  "the Vulkan and GL loaders (Debian and Ubuntu packages libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libgles2 libopengl0) and the NVIDIA driver's Vulkan ICD (nvidia_icd.json; in a container NVIDIA_DRIVER_CAPABILITIES must include graphics, and VK_DRIVER_FILES names the ICD file where it is not in a standard place)";

/** Why WebGPU refuses `gpu:N` with N > 0. */
export function webgpuFirstGpuOnly(id: number): string {
  return `the WebGPU execution provider runs on the first GPU only (onnxruntime-node has no setting that chooses another adapter), so it does not serve gpu:${id}: give the process that GPU alone (NVIDIA_VISIBLE_DEVICES=${id}) and use gpu:0, or use the CUDA execution provider`;
}

const PROVIDER_NAMES: Record<GpuProvider, string> = { cuda: 'CUDA', webgpu: 'WebGPU' };
const PROVIDER_NEEDS: Record<GpuProvider, string> = { cuda: CUDA_NEEDS, webgpu: WEBGPU_NEEDS };
/** Failures that say the provider cannot start here (missing libraries, no adapter), not that the model is broken. */
const PROVIDER_FAILURE: Record<GpuProvider, RegExp> = {
  cuda: /cuda|cudnn|cublas|libonnxruntime_providers|provider|shared librar/i,
  webgpu: /webgpu|wgpu|adapter|dawn|vulkan/i,
};

/** An execution provider as onnxruntime-node takes it. */
type ProviderEntry = string | { name: 'cuda'; deviceId: number } | { name: 'webgpu' };

/** The execution providers for a device: CPU, or the GPU provider (CUDA with its device id, or WebGPU). */
export function executionProvidersFor(device: Device, extra: readonly string[] = [], gpu: GpuProvider = 'cuda'): ProviderEntry[] {
  const providers: ProviderEntry[] = [...extra];
  if (device.kind === 'gpu') providers.push(gpu === 'cuda' ? { name: 'cuda', deviceId: device.id } : { name: 'webgpu' });
  else providers.push('cpu');
  return providers;
}

/** The part of an onnxruntime error that says why: its first line, without the source location and check. */
function reason(message: string): string {
  const first = (message.split('\n').find((l) => l.trim() !== '') ?? message).trim();
  const checked = /\bwas false\.\s*(.+)$/.exec(first);
  return (checked ? (checked[1] as string) : first).replace(/\.$/, '');
}

/** Why a GPU provider did not start; `needs` when what it needs is worth saying. */
interface ProviderFailure {
  provider: GpuProvider;
  why: string;
  needs: boolean;
}

/** The error of a GPU instance that no provider could start, naming each provider tried, why it failed and what it needs. */
function noGpuProvider(path: string, device: Device, setting: GpuExecutionProvider, failures: readonly ProviderFailure[]): TritonError {
  const tried = failures.map((f) => `${PROVIDER_NAMES[f.provider]}: ${f.why}${f.needs ? `; it needs ${PROVIDER_NEEDS[f.provider]}` : ''}`);
  const what = setting === 'auto' ? 'neither GPU execution provider (CUDA, WebGPU) can start' : `the ${PROVIDER_NAMES[setting]} execution provider (gpuExecutionProvider '${setting}') cannot start`;
  return new TritonError('INTERNAL', `cannot run '${path}' on gpu:${device.id}: ${what}. ${tried.join('. ')} (docs/onnx.md#gpus)`);
}

/**
 * Runs batches on one onnxruntime session: concatenates the requests' inputs along dim 0 (the one copy),
 * wraps them as onnxruntime tensors over the same memory, runs the outputs any request asked for, and
 * splits them back by each request's rows as views.
 */
export class OnnxRunner {
  // Private, so that the declarations emitted for this file name no onnxruntime-node type (an optional peer dependency).
  private constructor(
    private readonly ortModule: OrtModule,
    private readonly session: ort.InferenceSession,
    private readonly settings: OnnxRunnerSettings,
    private readonly provider: 'cpu' | GpuProvider,
  ) {}

  /** The execution provider the session runs on: `cpu`, `cuda` or `webgpu`. */
  get executionProvider(): 'cpu' | GpuProvider {
    return this.provider;
  }

  /**
   * Creates the session for a device. A GPU instance takes the provider `gpuExecutionProvider` names, or with
   * `auto` CUDA when its libraries load, else WebGPU; when none starts, the error names each provider tried, why it
   * failed and what it needs. A missing onnxruntime-node package is reported with how to install it.
   */
  static async create(settings: OnnxRunnerSettings, device: Device): Promise<OnnxRunner> {
    const ortModule = await loadOrt();
    const open = async (providers: ProviderEntry[]): Promise<ort.InferenceSession> =>
      ortModule.InferenceSession.create(settings.path, {
        executionProviders: providers as ort.InferenceSession.ExecutionProviderConfig[],
        intraOpNumThreads: settings.intraOpNumThreads,
        // In parallel mode onnxruntime's default (0) gives the branches the cores; sequential mode needs no such threads.
        interOpNumThreads: settings.interOpNumThreads ?? (settings.executionMode === 'parallel' ? 0 : 1),
        graphOptimizationLevel: settings.graphOptimizationLevel ?? 'all',
        // onnxruntime-node refuses these when present and undefined: only those set are passed.
        ...(settings.executionMode !== undefined && { executionMode: settings.executionMode }),
        ...(settings.enableCpuMemArena !== undefined && { enableCpuMemArena: settings.enableCpuMemArena }),
        ...(settings.enableMemPattern !== undefined && { enableMemPattern: settings.enableMemPattern }),
        ...(settings.sessionConfig !== undefined && { extra: settings.sessionConfig }),
      });
    const cannotLoad = (err: unknown) => new TritonError('INTERNAL', `cannot load ONNX model '${settings.path}': ${(err as Error).message}`);
    if (device.kind !== 'gpu') {
      try {
        return new OnnxRunner(ortModule, await open(executionProvidersFor(device, settings.executionProviders)), settings, 'cpu');
      } catch (err) {
        throw cannotLoad(err);
      }
    }
    const setting = settings.gpuExecutionProvider ?? 'auto';
    const failures: ProviderFailure[] = [];
    for (const provider of setting === 'auto' ? GPU_PROVIDERS : [setting]) {
      if (provider === 'webgpu' && device.id > 0) {
        failures.push({ provider, why: webgpuFirstGpuOnly(device.id), needs: false });
        continue;
      }
      try {
        return new OnnxRunner(ortModule, await open(executionProvidersFor(device, settings.executionProviders, provider)), settings, provider);
      } catch (err) {
        const message = (err as Error).message;
        if (!PROVIDER_FAILURE[provider].test(message)) throw cannotLoad(err);
        failures.push({ provider, why: reason(message), needs: true });
      }
    }
    throw noGpuProvider(settings.path, device, setting, failures);
  }

  /** Runs one batch. */
  async run(requests: Request[]): Promise<Response[]> {
    const first = requests[0];
    if (!first) return [];
    const rows = requests.map((r) => (this.settings.batching ? (Object.values(r.inputs)[0]?.shape[0] ?? 0) : 1));
    const feeds: Record<string, ort.Tensor> = {};
    for (const name of Object.keys(first.inputs)) {
      const parts = requests.map((r) => r.inputs[name] as Tensor);
      const t = this.settings.batching ? concatBatch(parts, requests) : (parts[0] as Tensor);
      feeds[name] = this.toOrt(this.reshaped(t, name, 'model'), name);
    }
    const wanted = new Set<string>();
    for (const r of requests) for (const n of r.requestedOutputs) wanted.add(n);
    const fetches = this.settings.outputs.filter((o) => wanted.has(o.name)).map((o) => o.name);
    const results = fetches.length > 0 ? await this.session.run(feeds, fetches) : await this.session.run(feeds);
    const outputs: Record<string, Tensor> = {};
    for (const o of this.settings.outputs) {
      const value = results[o.name];
      if (value) outputs[o.name] = this.reshaped(this.fromOrt(value, o.dtype), o.name, 'served');
    }
    if (!this.settings.batching) return [outputs];
    let start = 0;
    return rows.map((n) => {
      const response: Response = {};
      for (const [name, t] of Object.entries(outputs)) response[name] = sliceBatch(t, start, start + n);
      start += n;
      return response;
    });
  }

  /** The tensor with the dims of one side of its reshape (the batch dim kept); as it is when it has none. */
  private reshaped(t: Tensor, name: string, side: 'served' | 'model'): Tensor {
    const dims = this.settings.reshape?.[name]?.[side];
    if (!dims) return t;
    const batch = this.settings.batching ? [t.shape[0] ?? 0] : [];
    const elements = t.shape.reduce((n, d) => n * d, 1) / (this.settings.batching ? Math.max(1, batch[0] as number) : 1);
    const known = dims.reduce((n, d) => (d === -1 ? n : n * d), 1);
    const shape = dims.map((d) => (d === -1 ? (known === 0 ? 0 : elements / known) : d));
    return { ...t, shape: [...batch, ...shape] };
  }

  async release(): Promise<void> {
    await this.session.release();
  }

  private toOrt(t: Tensor, name: string): ort.Tensor {
    const type = DTYPES[t.dtype].onnx;
    if (t.dtype === 'BF16') throw invalidArgument(`input '${name}': onnxruntime-node has no BF16 tensors`);
    const data = t.dtype === 'BYTES' ? (t.data as Uint8Array[]).map((e) => Buffer.from(e.buffer, e.byteOffset, e.byteLength).toString('utf8')) : t.data;
    if (t.dtype === 'FP16') {
      // Where Float16Array exists (Node >= 24), onnxruntime-common wraps a float16 tensor's Uint16Array in a
      // Float16Array, whose byte length onnxruntime-node 1.30's binding reads as 0 ("not enough space: expected 4,
      // got 0"; microsoft/onnxruntime#26791): give it the same bits as a uint16 tensor, typed float16.
      const bits = new this.ortModule.Tensor('uint16', data as Uint16Array, [...t.shape]);
      return Object.assign(bits, { type: 'float16' }) as unknown as ort.Tensor;
    }
    return new this.ortModule.Tensor(type as 'float32', data as Float32Array, [...t.shape]);
  }

  private fromOrt(value: ort.Tensor, dtype: DataType): Tensor {
    const shape = value.dims.map(Number);
    if (dtype === 'BYTES') return { dtype, shape, data: (value.data as string[]).map((s) => Buffer.from(s, 'utf8')) };
    // FP16 travels as its bits in a Uint16Array; onnxruntime hands back a Float16Array where the runtime has one.
    if (dtype === 'FP16' && !(value.data instanceof Uint16Array)) {
      const half = value.data as unknown as { buffer: ArrayBuffer; byteOffset: number; length: number };
      return { dtype, shape, data: new Uint16Array(half.buffer, half.byteOffset, half.length) };
    }
    return { dtype, shape, data: value.data as TensorData };
  }
}
