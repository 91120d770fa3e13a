import type * as ort from 'onnxruntime-node';
import type { Request, Response } from '../callable';
import { TritonError, invalidArgument } from '../errors';
import type { Device } from '../instances/instance';
import { DTYPES, type DataType, type TensorData } from '../tensor/dtype';
import { concatBatch, sliceBatch, type Tensor } from '../tensor/tensor';
import { loadOrt, type OrtModule } from './load-ort';

/** Settings of one ONNX session, carried into its worker as `context.data`. */
export interface OnnxRunnerSettings {
  path: string;
  /** Whether dim 0 of every input and output is the batch dim. */
  batching: boolean;
  /** Output names and dtypes, in model order. */
  outputs: { name: string; dtype: DataType }[];
  intraOpNumThreads: number;
  interOpNumThreads?: number;
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  /** Extra execution providers to try before the device's (advanced). */
  executionProviders?: string[];
  /** Tensors whose dims differ between the client (`served`) and the model (`model`), without the batch dim. */
  reshape?: Record<string, { served: number[]; model: number[] }>;
}

/** How to install the GPU libraries onnxruntime-node needs for the CUDA execution provider. */
export const CUDA_INSTALL_HINT =
  "the CUDA execution provider is not available: reinstall onnxruntime-node with its GPU libraries (`npm install onnxruntime-node --onnxruntime-node-install=cuda12`, or remove `onnxruntime-node-install=skip` from .npmrc) on a machine with CUDA 12 and cuDNN 9";

/** The execution providers for a device: CPU, or CUDA with its device id. */
export function executionProvidersFor(device: Device, extra: readonly string[] = []): (string | { name: 'cuda'; deviceId: number })[] {
  const providers: (string | { name: 'cuda'; deviceId: number })[] = [...extra];
  if (device.kind === 'gpu') providers.push({ name: 'cuda', deviceId: device.id });
  else providers.push('cpu');
  return providers;
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
  ) {}

  /** Creates the session for a device; a missing onnxruntime-node package, or CUDA provider, is reported with how to install it. */
  static async create(settings: OnnxRunnerSettings, device: Device): Promise<OnnxRunner> {
    const ortModule = await loadOrt();
    const options: ort.InferenceSession.SessionOptions = {
      executionProviders: executionProvidersFor(device, settings.executionProviders) as ort.InferenceSession.ExecutionProviderConfig[],
      intraOpNumThreads: settings.intraOpNumThreads,
      interOpNumThreads: settings.interOpNumThreads ?? 1,
      graphOptimizationLevel: settings.graphOptimizationLevel ?? 'all',
    };
    try {
      const session = await ortModule.InferenceSession.create(settings.path, options);
      return new OnnxRunner(ortModule, session, settings);
    } catch (err) {
      const message = (err as Error).message;
      if (device.kind === 'gpu' && /cuda|provider|libonnxruntime_providers/i.test(message)) {
        throw new TritonError('INTERNAL', `cannot run '${settings.path}' on gpu:${device.id}: ${CUDA_INSTALL_HINT} (${message})`);
      }
      throw new TritonError('INTERNAL', `cannot load ONNX model '${settings.path}': ${message}`);
    }
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
