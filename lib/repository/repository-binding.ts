import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DynamicBatcherInit, ModelConfigInit, QueuePolicyInit, WarmupSettingInit } from '../config/model-config';
import type { TensorSpecInit } from '../config/tensor-spec';
import type { ModelConfigJson } from '../config/triton-model-config';
import { TritonError } from '../base/errors';
import type { BuildOptions } from '../model/model-builder';
import type { EnsembleStep } from '../model/ensemble';
import { ensemble } from '../model/ensemble';
import { onnxModel, type OnnxModelSpec } from '../onnx/onnx-model';
import { fromConfigType, type DataType } from '../tensor/dtype';
import { ConfigFields } from './config-fields';
import { batchInputs, batchOutputs, sequenceBatching } from './batching-fields';
import { DEFAULT_MAX_BATCH_SIZE } from '../config/backend-config';
import type { ModelFolder } from './model-folder';
import { fileInside } from './repository-paths';
import { scriptModelInstances } from './script-model';
import { readVersionPolicy, servedVersions } from './version-policy';

/** How a repository model runs. */
export type ModelKind = 'onnx' | 'ensemble' | 'script';

/** A repository model ready to build: one binding per served version. */
export interface RepositoryModel {
  readonly name: string;
  readonly kind: ModelKind;
  readonly bindings: readonly BuildOptions[];
  /** Step models an ensemble needs loaded first. */
  readonly steps: readonly string[];
}

/** Script files a version folder may hold, in the order they are looked for. */
const SCRIPT_FILES = ['model.ts', 'model.js', 'model.mjs', 'model.cjs', 'model.mts', 'model.cts'];

/**
 * Turns a model folder and its config into bindings, one per version the version policy serves. Every field
 * of the config is honoured or refused with an error naming it; with `strict` false, what the config leaves
 * out is completed from the ONNX model (platform, inputs, outputs, `max_batch_size` and dynamic batching),
 * as Triton's auto-complete does: a model that can batch gets `defaultMaxBatchSize` (Triton's
 * `--backend-config=onnxruntime,default-max-batch-size=N`; 0 leaves it without a batch dimension).
 */
export function repositoryModel(
  folder: ModelFolder,
  config: ModelConfigJson | undefined,
  configFile: string,
  strict: boolean,
  defaultMaxBatchSize = DEFAULT_MAX_BATCH_SIZE,
): RepositoryModel {
  const where = `model '${folder.name}' (${configFile})`;
  if (config === undefined && strict) {
    throw new TritonError('INVALID_CONFIG', `${where}: config.pbtxt is missing, and auto-complete is disabled (--disable-auto-complete-config or --strict-model-config), so the model needs one`);
  }
  const f = new ConfigFields(config ?? {}, where);
  const name = f.string('name');
  if (name !== undefined && name !== '' && name !== folder.name) {
    f.refuse('name', `is '${name}', but the model's folder is '${folder.name}'; they must match`);
  }
  const platform = f.string('platform') ?? '';
  const backend = f.string('backend') ?? '';
  const policy = readVersionPolicy(f.take('version_policy'), where);
  const maxBatchSize = f.integer('max_batch_size', 0);
  const inputs = tensorSpecs(f, 'input', folder);
  const outputs = tensorSpecs(f, 'output', folder);
  const batcher = dynamicBatcher(f.sub('dynamic_batching'));
  const groups = instanceGroups(f);
  const defaultFilename = f.string('default_model_filename') || undefined;
  const parameters = stringParameters(f);
  const warmup = f.messages('model_warmup').map(warmupSetting);
  const responseCache = f.sub('response_cache')?.boolean('enable');
  const steps = ensembleSteps(f.sub('ensemble_scheduling'));
  const accelerators = executionAccelerators(f.sub('optimization'));
  const decoupled = transactionPolicy(f.sub('model_transaction_policy'));
  for (const unset of ['runtime', 'cc_model_filenames', 'metric_tags']) f.takeDefault(unset, '', {});
  const sequence = sequenceBatching(f.sub('sequence_batching'), folder.dir);
  const batchInput = batchInputs(f);
  const batchOutput = batchOutputs(f);
  f.done();

  const kind = modelKind(folder, platform, backend, steps !== undefined, defaultFilename, where);
  const versions = servedVersions(policy, folder.versions, where);
  if (versions.length === 0) {
    throw new TritonError('INVALID_CONFIG', `${where}: no version folder to serve (a model needs at least one numeric folder, such as ${folder.name}/1)`);
  }
  const configInit: ModelConfigInit = {
    ...(maxBatchSize !== undefined ? { batching: maxBatchSize > 0, maxBatchSize: Math.max(maxBatchSize, 1) } : {}),
    // A config that states max_batch_size without dynamic_batching asks for Triton's default scheduler.
    ...(batcher !== undefined ? { batcher } : maxBatchSize !== undefined || kind !== 'onnx' ? { batcher: null } : {}),
    ...(parameters ? { parameters } : {}),
    ...(warmup.length > 0 ? { warmup } : {}),
    ...(responseCache ? { responseCache } : {}),
    ...(decoupled ? { decoupled } : {}),
    ...(sequence ? { sequenceBatching: sequence } : {}),
    ...(batchInput.length > 0 ? { batchInput } : {}),
    ...(batchOutput.length > 0 ? { batchOutput } : {}),
  };
  if (kind !== 'onnx') {
    if (configInit.batching === undefined) Object.assign(configInit, { batching: false });
    if (!inputs) f.refuse('input', `is required for a ${kind} model (only ONNX models are completed from the model file)`);
    if (!outputs) f.refuse('output', `is required for a ${kind} model (only ONNX models are completed from the model file)`);
  }
  if (kind === 'onnx' && strict) {
    for (const [field, value] of [['max_batch_size', maxBatchSize], ['input', inputs], ['output', outputs]] as const) {
      if (value === undefined) f.refuse(field, 'is missing, and auto-complete is disabled (--disable-auto-complete-config or --strict-model-config): nothing is read from the ONNX model');
    }
  }
  if (kind === 'ensemble' && groups.length > 0) f.refuse('instance_group', 'cannot be set on an ensemble');
  if (kind !== 'script' && decoupled) f.refuse('model_transaction_policy.decoupled', `is only supported for tstriton (script) models`);
  const configExtra = { version_policy: policy };

  const bindings = versions.map((version): BuildOptions => {
    const versionDir = path.join(folder.dir, String(version));
    const common = { modelName: folder.name, modelVersion: version, configExtra };
    if (kind === 'ensemble') {
      return { ...common, inferFunc: ensemble({ steps: steps ?? [] }), inputs, outputs, config: configInit };
    }
    if (kind === 'script') {
      const file = scriptFile(folder.dir, versionDir, defaultFilename, f, where);
      const count = groups.reduce((n, g) => n + g.count, 0) || 1;
      if (groups.some((g) => g.kind === 'KIND_GPU')) f.refuse('instance_group.kind', 'KIND_GPU is supported for ONNX models only; tstriton models run on the CPU');
      return { ...common, inferFunc: scriptModelInstances(file, count, folder.dir), inputs, outputs, config: configInit };
    }
    const file = modelFile(folder.dir, versionDir, defaultFilename ?? 'model.onnx', f);
    const spec = onnxSpec(file, groups, accelerators, maxBatchSize, where);
    // Auto-complete: a model that can batch, whose config does not say, takes the default max_batch_size.
    const batching = configInit.batching ?? (spec.batching && defaultMaxBatchSize > 0);
    const completed: ModelConfigInit = configInit.batching !== undefined ? configInit : { ...configInit, batching, ...(batching ? { maxBatchSize: defaultMaxBatchSize } : {}) };
    return {
      ...common,
      inferFunc: spec,
      inputs: strict ? inputs : completeTensors(inputs, spec.signature.inputs, batching),
      outputs: strict ? outputs : completeTensors(outputs, spec.signature.outputs, batching),
      config: completed,
    };
  });
  return { name: folder.name, kind, bindings, steps: (steps ?? []).map((s) => s.modelName) };
}

function modelKind(folder: ModelFolder, platform: string, backend: string, hasSteps: boolean, defaultFilename: string | undefined, where: string): ModelKind {
  if (platform === 'ensemble' || hasSteps) {
    if (!hasSteps) throw new TritonError('INVALID_CONFIG', `${where}: an ensemble needs ensemble_scheduling with at least one step`);
    if (platform !== 'ensemble') throw new TritonError('INVALID_CONFIG', `${where}: ensemble_scheduling needs platform: "ensemble"`);
    return 'ensemble';
  }
  if (backend === 'tstriton') return 'script';
  if (platform === 'onnxruntime_onnx' || backend === 'onnxruntime') return 'onnx';
  if (platform !== '' || backend !== '') {
    const what = platform !== '' ? `platform '${platform}'` : `backend '${backend}'`;
    throw new TritonError('INVALID_CONFIG', `${where}: ${what} is not supported; tstriton serves platform onnxruntime_onnx (backend onnxruntime), platform ensemble and backend tstriton`);
  }
  // Neither is set: the files decide, as Triton's auto-complete does.
  const latest = folder.versions[folder.versions.length - 1];
  const files = latest === undefined ? [] : safeList(path.join(folder.dir, String(latest)));
  if (defaultFilename !== undefined) return /\.onnx$/i.test(defaultFilename) ? 'onnx' : 'script';
  if (files.includes('model.onnx')) return 'onnx';
  if (SCRIPT_FILES.some((s) => files.includes(s))) return 'script';
  throw new TritonError(
    'INVALID_CONFIG',
    `${where}: cannot tell how to run the model: set platform or backend in config.pbtxt, or put model.onnx or model.ts in its version folder`,
  );
}

function onnxSpec(
  file: string,
  groups: readonly InstanceGroup[],
  accelerators: Accelerators,
  maxBatchSize: number | undefined,
  where: string,
): OnnxModelSpec {
  if (!fs.existsSync(file)) throw new TritonError('INVALID_CONFIG', `${where}: model file ${file} does not exist`);
  const devices = groups.flatMap((g) => (g.kind === 'KIND_GPU' ? g.gpus.flatMap((id) => Array.from({ length: g.count }, () => `gpu:${id}`)) : Array.from({ length: g.count }, () => 'cpu')));
  return onnxModel({
    path: file,
    devices: devices.length > 0 ? devices : ['cpu'],
    ...(maxBatchSize !== undefined && maxBatchSize > 0 ? { maxBatchSize } : {}),
    ...(accelerators.providers.length > 0 ? { executionProviders: accelerators.providers } : {}),
    ...(accelerators.gpu !== undefined ? { gpuExecutionProvider: accelerators.gpu } : {}),
  });
}

function scriptFile(modelDir: string, versionDir: string, defaultFilename: string | undefined, f: ConfigFields, where: string): string {
  const candidates = defaultFilename !== undefined ? [modelFile(modelDir, versionDir, defaultFilename, f)] : SCRIPT_FILES.map((c) => path.join(versionDir, c));
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) throw new TritonError('INVALID_CONFIG', `${where}: model file ${candidates[0] as string} does not exist`);
  return found;
}

/** The version's model file, `default_model_filename` when set: inside the model's folder, links followed. */
function modelFile(modelDir: string, versionDir: string, filename: string, f: ConfigFields): string {
  const inside = fileInside(modelDir, versionDir, filename);
  return 'path' in inside ? inside.path : f.refuse('default_model_filename', inside.reason);
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** The config's `input` or `output` list as tensor specs; undefined when the config has none. */
function tensorSpecs(f: ConfigFields, field: 'input' | 'output', folder: ModelFolder): TensorSpecInit[] | undefined {
  if (!f.has(field)) {
    f.take(field);
    return undefined;
  }
  return f.messages(field).map((t) => {
    const name = t.string('name');
    if (!name) t.refuse('name', 'is required');
    const dtype = dataType(t, 'data_type');
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

function dataType(f: ConfigFields, field: string): DataType {
  const raw = f.string(field);
  const dtype = raw === undefined ? undefined : fromConfigType(raw);
  if (!dtype) f.refuse(field, raw === undefined ? 'is required' : `'${raw}' is not a data type tstriton serves`);
  return dtype as DataType;
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

/** The tensors the config names, then (auto-complete) the model's other tensors, without the batch dim. */
function completeTensors(given: TensorSpecInit[] | undefined, signature: readonly { name: string; dtype: DataType; dims: number[] }[], batching: boolean): TensorSpecInit[] | undefined {
  if (!given || given.length === 0) return undefined;
  const missing = signature.filter((s) => !given.some((g) => g.name === s.name));
  return [...given, ...missing.map((s) => ({ name: s.name, dtype: s.dtype, shape: s.dims.slice(batching ? 1 : 0) }))];
}

function dynamicBatcher(f: ConfigFields | undefined): DynamicBatcherInit | undefined {
  if (!f) return undefined;
  const init: DynamicBatcherInit = {};
  const preferred = f.integers('preferred_batch_size');
  if (preferred) init.preferredBatchSize = preferred;
  const delay = f.integer('max_queue_delay_microseconds', 0);
  if (delay !== undefined) init.maxQueueDelayMicroseconds = delay;
  const ordering = f.boolean('preserve_ordering');
  if (ordering !== undefined) init.preserveOrdering = ordering;
  const levels = f.integer('priority_levels', 0);
  if (levels !== undefined) init.priorityLevels = levels;
  const level = f.integer('default_priority_level', 0);
  if (level !== undefined) init.defaultPriorityLevel = level;
  const policy = f.sub('default_queue_policy');
  if (policy) init.defaultQueuePolicy = queuePolicy(policy);
  const byLevel = f.map('priority_queue_policy');
  if (byLevel) {
    init.priorityQueuePolicy = Object.fromEntries(
      Object.entries(byLevel).map(([k, v]) => [Number(k), queuePolicy(f.entry('priority_queue_policy', k, v))]),
    );
  }
  f.takeDefault('preferred_batch_size_per_instance', false);
  f.done();
  return init;
}

function queuePolicy(f: ConfigFields): QueuePolicyInit {
  const init: QueuePolicyInit = {};
  const action = f.string('timeout_action');
  if (action !== undefined) {
    if (action !== 'REJECT' && action !== 'DELAY') f.refuse('timeout_action', `must be REJECT or DELAY, got ${action}`);
    init.timeoutAction = action as 'REJECT' | 'DELAY';
  }
  const timeout = f.integer('default_timeout_microseconds', 0);
  if (timeout !== undefined) init.defaultTimeoutMicroseconds = timeout;
  const override = f.boolean('allow_timeout_override');
  if (override !== undefined) init.allowTimeoutOverride = override;
  const size = f.integer('max_queue_size', 0);
  if (size !== undefined) init.maxQueueSize = size;
  f.done();
  return init;
}

interface InstanceGroup {
  kind: 'KIND_CPU' | 'KIND_GPU';
  count: number;
  gpus: number[];
}

function instanceGroups(f: ConfigFields): InstanceGroup[] {
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

function stringParameters(f: ConfigFields): Record<string, string> | undefined {
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

function warmupSetting(w: ConfigFields): WarmupSettingInit {
  const name = w.string('name') ?? '';
  const batchSize = w.integer('batch_size', 0);
  const count = w.integer('count', 0);
  const inputs = Object.fromEntries(
    Object.entries(w.map('inputs') ?? {}).map(([input, value]) => {
      const i = w.entry('inputs', input, value);
      const dtype = dataType(i, 'data_type');
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

function ensembleSteps(f: ConfigFields | undefined): EnsembleStep[] | undefined {
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

/** What `optimization.execution_accelerators` asks of an ONNX model's GPU instances. */
interface Accelerators {
  /** Providers tried before the GPU's own (`tensorrt`). */
  providers: string[];
  /** The GPU provider the config names (`cuda`, `webgpu`); the server's setting when absent. */
  gpu?: 'cuda' | 'webgpu';
}

/**
 * `optimization`: execution accelerators that map onto onnxruntime's providers (`tensorrt` before CUDA, `cuda`,
 * `webgpu`); the fields Triton prints at their defaults.
 */
function executionAccelerators(f: ConfigFields | undefined): Accelerators {
  const result: Accelerators = { providers: [] };
  if (!f) return result;
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

function transactionPolicy(f: ConfigFields | undefined): boolean {
  if (!f) return false;
  const decoupled = f.boolean('decoupled') ?? false;
  f.done();
  return decoupled;
}
