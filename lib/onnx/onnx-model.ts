import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { ModelConfig, type ModelConfigInit } from '../config/model-config';
import type { TensorSpecInit } from '../config/tensor-spec';
import { TritonError } from '../base/errors';
import { parseDevice, type Device } from '../instances/instance';
import { workers, type WorkerOptions, type WorkerSpec } from '../instances/worker-spec';
import { GPU_EXECUTION_PROVIDERS, type GpuExecutionProvider } from '../config/triton-config';
import { webgpuFirstGpuOnly, type OnnxRunnerSettings } from './onnx-runner';
import { backendParameters, checkSessionOptions, graphLevelOf, type OnnxSessionOptions } from './onnx-session-options';
import { isBatchable, readOnnxSignature, type OnnxSignature, type OnnxTensorSignature } from './onnx-signature';

/** Marks the objects `onnxModel()` returns. */
export const ONNX_MODEL_MARK: unique symbol = Symbol.for('tstriton.onnxModel');

/** The argument of `onnxModel()`. */
export interface OnnxModelInit extends OnnxSessionOptions {
  /** Path of the `.onnx` file. */
  path: string;
  /** One worker instance (and session) per entry: `'cpu'`, `'gpu:0'`, ...; `['cpu']` by default. */
  devices?: readonly (string | Device)[];
  /** Largest batch when the model batches (every input and output has a symbolic first dim); 4 by default, as Triton. */
  maxBatchSize?: number;
  /**
   * Execution providers to try before the device's own (`'tensorrt'` before CUDA on a GPU), as Triton's
   * `optimization.execution_accelerators`; the load fails naming it when this onnxruntime build lacks it.
   */
  executionProviders?: readonly string[];
  /**
   * What the GPU instances run on: `'auto'` (CUDA when its libraries load, else WebGPU), `'cuda'` or `'webgpu'`;
   * the server's `gpuExecutionProvider` by default. WebGPU serves `gpu:0` only.
   */
  gpuExecutionProvider?: GpuExecutionProvider;
  /** Settings of the worker threads (heap limits, restart delays). */
  workerOptions?: WorkerOptions;
}

/** An ONNX model ready to bind: its file, its signature and its instances. */
export interface OnnxModelSpec {
  readonly [ONNX_MODEL_MARK]: true;
  readonly path: string;
  readonly signature: OnnxSignature;
  readonly batching: boolean;
  readonly init: OnnxModelInit;
}

/**
 * Declares an ONNX model for `bind({ inferFunc: onnxModel({ path }) })`: its inputs, outputs and batching are
 * read from the file, and each device gets a worker thread with its own onnxruntime session.
 */
export function onnxModel(init: OnnxModelInit): OnnxModelSpec {
  if (typeof init?.path !== 'string') throw new TritonError('INVALID_CONFIG', 'onnxModel: path must be the path of an .onnx file');
  checkSessionOptions(init, `onnxModel(${init.path})`);
  const file = path.resolve(init.path);
  const signature = readOnnxSignature(file);
  return Object.freeze({ [ONNX_MODEL_MARK]: true as const, path: file, signature, batching: isBatchable(signature), init: { ...init, path: file } });
}

/** True if `value` was made by `onnxModel()`. */
export function isOnnxModelSpec(value: unknown): value is OnnxModelSpec {
  return typeof value === 'object' && value !== null && (value as Partial<OnnxModelSpec>)[ONNX_MODEL_MARK] === true;
}

/** What `bind()` needs to serve an ONNX model. */
export interface OnnxBinding {
  inputs: TensorSpecInit[];
  outputs: TensorSpecInit[];
  config: ModelConfig;
  inferFunc: WorkerSpec;
  platform: string;
  backend: string;
  defaultModelFilename: string;
  /** `optimization.graph.level`, when a level other than onnxruntime's default (`all`) was given. */
  graphLevel?: number;
  /**
   * What the config's `optimization.execution_accelerators.gpu_execution_accelerator` reports before the instances
   * start: the accelerators asked for (`tensorrt`) and the GPU provider when one is set; the instances' own reports
   * replace the provider once they run (Model.load).
   */
  gpuExecutionAccelerators: string[];
}

/**
 * Derives the specs and config of an ONNX model, applying the user's overrides: names, shapes and config may
 * be given, but must agree with the model (same tensors, same dtypes, compatible dims, batching only if every
 * tensor has a symbolic first dim); a mismatch names the tensor.
 */
export function resolveOnnxBinding(
  spec: OnnxModelSpec,
  modelName: string,
  overrides: { inputs?: readonly TensorSpecInit[]; outputs?: readonly TensorSpecInit[]; config?: ModelConfig | ModelConfigInit },
  server: { gpuExecutionProvider?: GpuExecutionProvider; defaultMaxBatchSize?: number } = {},
): OnnxBinding {
  const where = `model '${modelName}' (${spec.path})`;
  // The server's default-max-batch-size (--backend-config) when the model does not say; 0: no batch dimension.
  const maxBatchSize = spec.init.maxBatchSize ?? server.defaultMaxBatchSize ?? 4;
  const config =
    overrides.config instanceof ModelConfig
      ? overrides.config
      : new ModelConfig({
          ...(maxBatchSize > 0 ? { maxBatchSize } : {}),
          batching: spec.batching && maxBatchSize > 0,
          ...overrides.config,
          // The session settings given, as Triton's onnxruntime backend reads them from the config's parameters.
          parameters: { ...backendParameters(spec.init), ...overrides.config?.parameters },
        });
  if (config.batching && !spec.batching) {
    throw new TritonError('INVALID_CONFIG', `${where}: batching needs a symbolic first dim on every input and output, and this model has none; set batching: false`);
  }
  const batchDims = config.batching ? 1 : 0;
  const derive = (t: OnnxTensorSignature): TensorSpecInit => ({ name: t.name, dtype: t.dtype, shape: t.dims.slice(batchDims) });
  const inputs = reconcile('input', spec.signature.inputs.map(derive), overrides.inputs, where);
  const outputs = reconcile('output', spec.signature.outputs.map(derive), overrides.outputs, where);
  const devices = (spec.init.devices ?? ['cpu']).map((d) => parseDevice(d));
  const cpuInstances = Math.max(1, devices.filter((d) => d.kind === 'cpu').length);
  const gpuExecutionProvider = gpuProviderOf(spec, server, devices, where);
  const settings: OnnxRunnerSettings = {
    path: spec.path,
    batching: config.batching,
    outputs: outputs.map((o) => ({ name: o.name as string, dtype: o.dtype })),
    // 0, as in Triton's intra_op_thread_count, is the default too.
    intraOpNumThreads: spec.init.intraOpNumThreads || Math.max(1, Math.floor(availableParallelism() / cpuInstances)),
    interOpNumThreads: spec.init.interOpNumThreads,
    executionMode: spec.init.executionMode,
    graphOptimizationLevel: spec.init.graphOptimizationLevel,
    enableCpuMemArena: spec.init.enableCpuMemArena,
    enableMemPattern: spec.init.enableMemPattern,
    sessionConfig: spec.init.sessionConfig && { ...spec.init.sessionConfig },
    executionProviders: spec.init.executionProviders && [...spec.init.executionProviders],
    gpuExecutionProvider,
    reshape: reshapes([...inputs, ...outputs]),
  };
  const onGpu = devices.some((d) => d.kind === 'gpu');
  const named = onGpu || spec.init.gpuExecutionProvider !== undefined ? gpuExecutionProvider : 'auto';
  const gpuExecutionAccelerators = [
    ...(onGpu ? (spec.init.executionProviders ?? []).filter((p) => p === 'tensorrt') : []),
    ...(named !== 'auto' ? [named] : []),
  ];
  const module = path.join(__dirname, `onnx-worker${path.extname(__filename)}`);
  return {
    inputs,
    outputs,
    config,
    inferFunc: workers({ module, devices, options: spec.init.workerOptions, data: settings }),
    platform: 'onnxruntime_onnx',
    backend: 'onnxruntime',
    defaultModelFilename: path.basename(spec.path),
    graphLevel: graphLevelOf(spec.init.graphOptimizationLevel),
    gpuExecutionAccelerators,
  };
}

/**
 * The GPU provider setting of a model: its own, else the server's, else `auto`. WebGPU, named, refuses `gpu:N`
 * with N > 0 here, at bind; with `auto` such an instance tries CUDA only (OnnxRunner.create).
 */
function gpuProviderOf(spec: OnnxModelSpec, server: { gpuExecutionProvider?: GpuExecutionProvider }, devices: readonly Device[], where: string): GpuExecutionProvider {
  const own = spec.init.gpuExecutionProvider;
  if (own !== undefined && !(GPU_EXECUTION_PROVIDERS as readonly string[]).includes(own)) {
    throw new TritonError('INVALID_CONFIG', `${where}: gpuExecutionProvider must be one of ${GPU_EXECUTION_PROVIDERS.join(', ')}, got ${JSON.stringify(own)}`);
  }
  const setting = own ?? server.gpuExecutionProvider ?? 'auto';
  const far = devices.find((d) => d.kind === 'gpu' && d.id > 0);
  if (setting === 'webgpu' && far) throw new TritonError('INVALID_CONFIG', `${where}: ${webgpuFirstGpuOnly(far.id)}`);
  return setting;
}

/** The model's tensors, with the user's names/shapes where given; every model tensor must appear once. */
function reconcile(kind: 'input' | 'output', derived: TensorSpecInit[], given: readonly TensorSpecInit[] | undefined, where: string): TensorSpecInit[] {
  if (!given || given.length === 0) return derived;
  if (given.length !== derived.length) {
    throw new TritonError('INVALID_CONFIG', `${where}: the model has ${derived.length} ${kind}s (${derived.map((d) => d.name).join(', ')}), ${given.length} were given`);
  }
  return given.map((g, i) => {
    const name = g.name ?? (derived[i] as TensorSpecInit).name;
    const model = derived.find((d) => d.name === name);
    if (!model) throw new TritonError('INVALID_CONFIG', `${where}: ${kind} '${name}' is not in the model, whose ${kind}s are ${derived.map((d) => d.name).join(', ')}`);
    if (g.dtype !== model.dtype) throw new TritonError('INVALID_CONFIG', `${where}: ${kind} '${name}' is ${model.dtype} in the model, not ${g.dtype}`);
    // With reshape, the model sees the reshape dims and the client the dims.
    const dims = g.reshape ?? g.shape;
    const ok = dims.length === model.shape.length && dims.every((d, j) => model.shape[j] === -1 || d === model.shape[j]);
    if (!ok) {
      const field = g.reshape ? 'reshape' : 'dims';
      throw new TritonError('INVALID_CONFIG', `${where}: ${kind} '${name}' has dims [${model.shape.join(',')}] in the model; ${field} [${dims.join(',')}] does not fit`);
    }
    if (g.reshape && !sameElementCount(g.shape, g.reshape)) {
      throw new TritonError('INVALID_CONFIG', `${where}: ${kind} '${name}': dims [${g.shape.join(',')}] and reshape [${g.reshape.join(',')}] do not hold the same number of elements`);
    }
    return { ...g, name };
  });
}

/** True when two dim lists can hold the same elements: equal products, or both with one variable dim. */
function sameElementCount(a: readonly number[], b: readonly number[]): boolean {
  const variable = (dims: readonly number[]) => dims.filter((d) => d === -1).length;
  if (variable(a) > 1 || variable(b) > 1) return false;
  if (variable(a) !== variable(b)) return false;
  const product = (dims: readonly number[]) => dims.reduce((n, d) => (d === -1 ? n : n * d), 1);
  return variable(a) === 1 ? true : product(a) === product(b);
}

/** Served and model dims of the tensors that declare a reshape. */
function reshapes(specs: readonly TensorSpecInit[]): OnnxRunnerSettings['reshape'] {
  const entries = specs.filter((s) => s.reshape).map((s): [string, { served: number[]; model: number[] }] => [s.name as string, { served: [...s.shape], model: [...(s.reshape as number[])] }]);
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}
