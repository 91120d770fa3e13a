import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ModelConfigInit } from '../config/model-config';
import type { TensorSpecInit } from '../config/tensor-spec';
import type { ModelConfigJson } from '../config/triton-model-config';
import { TritonError } from '../base/errors';
import type { BuildOptions } from '../model/model-builder';
import { ensemble } from '../model/ensemble';
import { onnxModel, type OnnxModelSpec } from '../onnx/onnx-model';
import { sessionOptionsOf, type OnnxSessionOptions } from '../onnx/onnx-session-options';
import type { DataType } from '../tensor/dtype';
import { ConfigFields } from './config-fields';
import { batchInputs, batchOutputs, dynamicBatcher, sequenceBatching } from './batching-fields';
import { DEFAULT_MAX_BATCH_SIZE } from '../config/backend-config';
import type { ModelFolder } from './model-folder';
import { ensembleSteps, executionAccelerators, instanceGroups, stringParameters, tensorSpecs, transactionPolicy, warmupSetting, type Accelerators, type InstanceGroup } from './model-fields';
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
  if (kind !== 'onnx' && accelerators.graphLevel !== undefined) f.refuse('optimization.graph', `is only supported for ONNX models, not for a ${kind} model`);
  // Triton's onnxruntime backend reads its session settings from the config's parameters; the parameters stay in the config.
  const session = kind === 'onnx' ? sessionOptionsOf(parameters ?? {}, accelerators.graphLevel, (field, why) => f.refuse(field, why)) : {};
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
    const spec = onnxSpec(file, groups, accelerators, session, maxBatchSize, where);
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
  session: OnnxSessionOptions,
  maxBatchSize: number | undefined,
  where: string,
): OnnxModelSpec {
  if (!fs.existsSync(file)) throw new TritonError('INVALID_CONFIG', `${where}: model file ${file} does not exist`);
  const devices = groups.flatMap((g) => (g.kind === 'KIND_GPU' ? g.gpus.flatMap((id) => Array.from({ length: g.count }, () => `gpu:${id}`)) : Array.from({ length: g.count }, () => 'cpu')));
  return onnxModel({
    ...session,
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

/** The tensors the config names, then (auto-complete) the model's other tensors, without the batch dim. */
function completeTensors(given: TensorSpecInit[] | undefined, signature: readonly { name: string; dtype: DataType; dims: number[] }[], batching: boolean): TensorSpecInit[] | undefined {
  if (!given || given.length === 0) return undefined;
  const missing = signature.filter((s) => !given.some((g) => g.name === s.name));
  return [...given, ...missing.map((s) => ({ name: s.name, dtype: s.dtype, shape: s.dims.slice(batching ? 1 : 0) }))];
}

