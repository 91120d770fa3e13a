import * as fs from 'node:fs';
import type { WarmupSettingInit } from '../config/model-config';
import type { TensorSpecInit } from '../config/tensor-spec';
import type { EnsembleStep } from '../model/ensemble';
import type { ConfigFields } from './config-fields';
import type { ModelFolder } from './model-folder';
import { fileInside } from './repository-paths';

// Reads a config.pbtxt's model fields into their bind() forms: the tensors, the instance groups, the parameters,
// the warm-up, the ensemble steps, the execution accelerators and the transaction policy.

/** The config's `input` or `output` list as tensor specs; undefined when the config has none. */
export function tensorSpecs(f: ConfigFields, field: 'input' | 'output', folder: ModelFolder): TensorSpecInit[] | undefined {
  if (!f.has(field)) {
    f.take(field);
    return undefined;
  }
  return f.messages(field).map((t) => {
    const name = t.string('name');
    if (!name) t.refuse('name', 'is required');
    const dtype = t.dataType('data_type');
    const dims = t.integers('dims') ?? [];
    if (dims.some((d) => d < -1 || d === 0)) t.refuse('dims', `must be positive or -1, got [${dims.join(', ')}]`);
    const reshapeField = t.sub('reshape');
    const reshape = reshapeField?.integers('shape');
    reshapeField?.done();
    t.takeDefault('format', 'FORMAT_NONE');
    t.takeDefault('is_shape_tensor', false);
    t.takeDefault('is_non_linear_format_io', false);
    const spec: TensorSpecInit = { name, dtype, shape: dims, ...(reshape ? { reshape } : {}) };
    if (field === 'input') {
      const optional = t.boolean('optional');
      if (optional) Object.assign(spec, { optional });
      const ragged = t.boolean('allow_ragged_batch');
      if (ragged) Object.assign(spec, { allowRaggedBatch: true });
    } else {
      const labelFile = t.string('label_filename');
      if (labelFile) Object.assign(spec, { labels: readLabels(folder, labelFile, t) });
    }
    t.done();
    return spec;
  }).filter((s, i, all) => all.findIndex((o) => o.name === s.name) === i || f.refuse(`${field}[${i}].name`, `'${s.name}' is declared twice`));
}

function readLabels(folder: ModelFolder, file: string, f: ConfigFields): string[] {
  const inside = fileInside(folder.dir, folder.dir, file);
  if (!('path' in inside)) return f.refuse('label_filename', inside.reason);
  const full = inside.path;
  try {
    return fs.readFileSync(full, 'utf8').split(/\r?\n/).filter((line, i, all) => line !== '' || i < all.length - 1);
  } catch (err) {
    return f.refuse('label_filename', `names ${full}, which cannot be read: ${(err as Error).message}`);
  }
}

export interface InstanceGroup {
  kind: 'KIND_CPU' | 'KIND_GPU';
  count: number;
  gpus: number[];
}

export function instanceGroups(f: ConfigFields): InstanceGroup[] {
  return f.messages('instance_group').map((g) => {
    g.string('name');
    const kind = g.string('kind') ?? 'KIND_AUTO';
    if (!['KIND_AUTO', 'KIND_CPU', 'KIND_GPU', 'KIND_MODEL'].includes(kind)) g.refuse('kind', `'${kind}' is not an instance kind`);
    const count = g.integer('count', 1) ?? 1;
    const gpus = g.integers('gpus') ?? [];
    if (kind === 'KIND_GPU' && gpus.length === 0) g.refuse('gpus', 'must list the GPUs of a KIND_GPU group (tstriton does not enumerate GPUs)');
    if (kind !== 'KIND_GPU' && gpus.length > 0) g.refuse('gpus', `is only meaningful with kind KIND_GPU, not ${kind}`);
    g.takeDefault('secondary_devices', []);
    g.takeDefault('profile', []);
    g.takeDefault('passive', false);
    g.takeDefault('host_policy', '');
    g.done();
    // KIND_AUTO and KIND_MODEL run on the CPU here: tstriton never places a model on a GPU it was not given.
    return { kind: kind === 'KIND_GPU' ? 'KIND_GPU' : 'KIND_CPU', count, gpus };
  });
}

export function stringParameters(f: ConfigFields): Record<string, string> | undefined {
  const map = f.map('parameters');
  if (!map) return undefined;
  return Object.fromEntries(
    Object.entries(map).map(([key, value]) => {
      const p = f.entry('parameters', key, value);
      const text = p.string('string_value') ?? '';
      p.done();
      return [key, text];
    }),
  );
}

export function warmupSetting(w: ConfigFields): WarmupSettingInit {
  const name = w.string('name') ?? '';
  const batchSize = w.integer('batch_size', 0);
  const count = w.integer('count', 0);
  const inputs = Object.fromEntries(
    Object.entries(w.map('inputs') ?? {}).map(([input, value]) => {
      const i = w.entry('inputs', input, value);
      const dtype = i.dataType('data_type');
      const dims = i.integers('dims') ?? [];
      const random = i.boolean('random_data') ?? false;
      i.boolean('zero_data');
      if (i.has('input_data_file')) i.refuse('input_data_file', 'is not supported by tstriton: use zero_data or random_data');
      i.done();
      return [input, { dtype, dims, data: random ? ('random' as const) : ('zero' as const) }];
    }),
  );
  w.done();
  return { name, inputs, ...(batchSize ? { batchSize } : {}), ...(count ? { count } : {}) };
}

export function ensembleSteps(f: ConfigFields | undefined): EnsembleStep[] | undefined {
  if (!f) return undefined;
  const steps = f.messages('step').map((s) => {
    const modelName = s.string('model_name');
    if (!modelName) s.refuse('model_name', 'is required');
    const version = s.integer('model_version');
    const inputMap = (s.map('input_map') ?? {}) as Record<string, string>;
    const outputMap = (s.map('output_map') ?? {}) as Record<string, string>;
    s.takeDefault('model_namespace', '');
    s.done();
    return { modelName: modelName as string, ...(version !== undefined && version > 0 ? { modelVersion: version } : {}), inputMap, outputMap };
  });
  f.done();
  return steps;
}

/** What `optimization` asks of an ONNX model: its GPU instances' accelerators and its graph optimization level. */
export interface Accelerators {
  /** Providers tried before the GPU's own (`tensorrt`). */
  providers: string[];
  /** The GPU provider the config names (`cuda`, `webgpu`); the server's setting when absent. */
  gpu?: 'cuda' | 'webgpu';
  /** `graph.level`, when given. */
  graphLevel?: number;
}

/**
 * `optimization`: execution accelerators that map onto onnxruntime's providers (`tensorrt` before CUDA, `cuda`,
 * `webgpu`); the graph optimization level; the fields Triton prints at their defaults.
 */
export function executionAccelerators(f: ConfigFields | undefined): Accelerators {
  const result: Accelerators = { providers: [] };
  if (!f) return result;
  const graph = f.sub('graph');
  if (graph) {
    const level = graph.integer('level');
    graph.done();
    if (level !== undefined) result.graphLevel = level;
  }
  const accelerators = f.sub('execution_accelerators');
  if (accelerators) {
    for (const a of accelerators.messages('gpu_execution_accelerator')) {
      const name = a.string('name') ?? '';
      if (name !== 'tensorrt' && name !== 'cuda' && name !== 'webgpu') {
        a.refuse('name', `'${name}' is not an onnxruntime execution provider tstriton can use on a GPU (tensorrt, cuda, webgpu)`);
      }
      a.takeDefault('parameters', {});
      // TensorRT runs on CUDA: it names CUDA as the GPU's provider.
      const gpu = name === 'webgpu' ? 'webgpu' : 'cuda';
      if (result.gpu !== undefined && result.gpu !== gpu) {
        a.refuse('name', `'${name}' cannot go with ${result.gpu === 'webgpu' ? "'webgpu'" : "'cuda' or 'tensorrt'"}: a GPU instance runs on CUDA or on WebGPU (name neither for CUDA when its libraries load, else WebGPU)`);
      }
      a.done();
      result.gpu = gpu;
      if (name === 'tensorrt') result.providers.push('tensorrt');
    }
    for (const [i, a] of accelerators.messages('cpu_execution_accelerator').entries()) {
      a.refuse('name', `'${String(a.take('name'))}' (cpu_execution_accelerator[${i}]) is not available in onnxruntime-node; remove it`);
    }
    accelerators.done();
  }
  f.takeDefault('priority', 'PRIORITY_DEFAULT');
  f.takeDefault('input_pinned_memory', { enable: true });
  f.takeDefault('output_pinned_memory', { enable: true });
  f.takeDefault('gather_kernel_buffer_threshold', 0);
  f.takeDefault('eager_batching', false);
  f.done();
  return result;
}

export function transactionPolicy(f: ConfigFields | undefined): boolean {
  if (!f) return false;
  const decoupled = f.boolean('decoupled') ?? false;
  f.done();
  return decoupled;
}
