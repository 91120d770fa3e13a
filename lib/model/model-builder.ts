import { ModelConfig } from '../config/model-config';
import type { BindOptions } from './bind-options';
import type { InferFunc } from '../callable/infer-func';
import { nameSpecs } from '../config/tensor-spec';
import { validateOrThrow } from '../config/validate';
import { TritonError, type UnrecoverableError } from '../base/errors';
import { createInstances } from '../instances/create-instances';
import { isOnnxModelSpec, resolveOnnxBinding } from '../onnx/onnx-model';
import type { GpuExecutionProvider } from '../config/triton-config';
import type { Tracer } from '../tracing/trace';
import type { CustomMetrics } from '../callable/custom-metrics';
import { attachChatTemplate, compileChatTemplate } from './chat-template';
import { EnsembleInstance, ensembleSchedulingJson, isEnsembleSpec, planEnsemble } from './ensemble';
import { Model, type LatencyObserverFactory } from './model';
import type { BlsHandler } from './request-pipeline';
import type { ModelRepository } from './model-repository';
import type { ResponseCache } from './response-cache';

export type { BindOptions } from './bind-options';

/** A binding with what a repository adds to the reported config (`version_policy`). */
export interface BuildOptions extends BindOptions {
  /** Top-level fields of the generated config that replace its defaults. */
  configExtra?: Record<string, unknown>;
}

/** What a model is built with besides its binding: the server's parts it uses. */
export interface BuildContext {
  readonly repository: ModelRepository;
  readonly responseCache: ResponseCache | undefined;
  readonly tracer: Tracer;
  /** Makes each model's latency observer, when latency summaries or histograms are on. */
  readonly observeLatencies?: LatencyObserverFactory;
  /** Makes each model's custom metrics (`context.metrics`). */
  readonly customMetrics?: (model: string, version: string) => CustomMetrics;
  /** Serves the model's `request.infer(...)` calls. */
  readonly bls: BlsHandler;
  /** Called when the model's callable throws UnrecoverableError. */
  readonly onUnrecoverable: (err: UnrecoverableError, model: Model) => void;
  /** The server's `gpuExecutionProvider`: what the ONNX models' GPU instances run on, unless a model names its own. */
  readonly gpuExecutionProvider?: GpuExecutionProvider;
  /** The server's `default-max-batch-size` (`backendConfig`): an ONNX model's `maxBatchSize` when it gives none. */
  readonly defaultMaxBatchSize?: number;
}

const MODEL_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** Checks a binding's name and version, and that the repository does not hold them yet. */
export function checkBinding(options: BindOptions, repository: ModelRepository): { modelName: string; version: number } {
  const { modelName } = options;
  if (typeof modelName !== 'string' || !MODEL_NAME.test(modelName)) {
    throw new TritonError('INVALID_CONFIG', `invalid modelName ${JSON.stringify(modelName)}: use letters, digits, '_', '-' and '.', starting with a letter, digit or '_'`);
  }
  const version = options.modelVersion ?? 1;
  if (!Number.isInteger(version) || version < 1) {
    throw new TritonError('INVALID_CONFIG', `invalid modelVersion for model '${modelName}': expected a positive integer, got ${String(version)}`);
  }
  if (repository.has(modelName)) {
    const taken = repository.all().some((m) => m.name === modelName && m.version === String(version));
    if (taken) throw new TritonError('ALREADY_EXISTS', `model '${modelName}' version ${version} is already bound`);
  }
  return { modelName, version };
}

/** Builds a model and its instances from its binding (at bind, and again when it is loaded after an unload). */
export function buildModel(options: BuildOptions, modelName: string, version: number, server: BuildContext): Model {
  const onnx = isOnnxModelSpec(options.inferFunc) ? resolveOnnxBinding(options.inferFunc, modelName, options, { gpuExecutionProvider: server.gpuExecutionProvider, defaultMaxBatchSize: server.defaultMaxBatchSize }) : undefined;
  const config = onnx?.config ?? (options.config instanceof ModelConfig ? options.config : new ModelConfig(options.config));
  validateOrThrow(config, `ModelConfig of model '${modelName}'`);
  const chatTemplate = compileChatTemplate(options.chatTemplate, modelName);
  if (config.responseCache && !server.responseCache) {
    throw new TritonError(
      'INVALID_CONFIG',
      `model '${modelName}' enables responseCache, but the server has no response cache: give it a size with new Triton({ responseCacheByteSize }) or TSTRITON_RESPONSE_CACHE_BYTE_SIZE`,
    );
  }
  if (config.responseCache && config.decoupled) {
    throw new TritonError('INVALID_CONFIG', `model '${modelName}' is decoupled: decoupled models cannot use the response cache`);
  }
  const inputs = nameSpecs(onnx?.inputs ?? options.inputs ?? [], 'INPUT');
  const outputs = nameSpecs(onnx?.outputs ?? options.outputs ?? [], 'OUTPUT');
  inputs.forEach((s, i) => validateOrThrow(s, `input ${i} of model '${modelName}'`));
  outputs.forEach((s, i) => validateOrThrow(s, `output ${i} of model '${modelName}'`));
  if (outputs.length === 0) throw new TritonError('INVALID_CONFIG', `model '${modelName}' must declare at least one output`);
  const reshaped = [...inputs, ...outputs].find((s) => s.reshape !== undefined);
  if (reshaped && !onnx) throw new TritonError('INVALID_CONFIG', `model '${modelName}': '${reshaped.name}' has a reshape; reshape is supported for ONNX models only`);
  const labelled = inputs.find((s) => s.labels !== undefined);
  if (labelled) throw new TritonError('INVALID_CONFIG', `model '${modelName}': input '${labelled.name}' has labels; only outputs take labels`);
  for (const [kind, specs] of [['input', inputs], ['output', outputs]] as const) {
    const seen = new Set<string>();
    for (const s of specs) {
      if (seen.has(s.name)) throw new TritonError('INVALID_CONFIG', `model '${modelName}' declares ${kind} '${s.name}' twice`);
      seen.add(s.name);
    }
  }
  let instances;
  let ensembleFields: { platform: string; backend: string; instanceGroups: []; configExtra: Record<string, unknown> } | undefined;
  if (isEnsembleSpec(options.inferFunc)) {
    const steps = planEnsemble(modelName, options.inferFunc, inputs, outputs, config.effectiveMaxBatchSize, server.repository);
    // An ensemble's own queue only forwards: each step batches in its model's scheduler.
    config.batcher = null;
    instances = [new EnsembleInstance(`${modelName}_0`, steps)];
    ensembleFields = { platform: 'ensemble', backend: '', instanceGroups: [], configExtra: ensembleSchedulingJson(options.inferFunc.steps) };
  } else {
    instances = createInstances(onnx?.inferFunc ?? (options.inferFunc as InferFunc), modelName);
  }
  const model = new Model({
    platform: ensembleFields?.platform ?? onnx?.platform,
    backend: ensembleFields?.backend ?? onnx?.backend,
    instanceGroups: ensembleFields?.instanceGroups,
    configExtra: { ...options.configExtra, ...ensembleFields?.configExtra },
    bls: server.bls,
    defaultModelFilename: onnx?.defaultModelFilename,
    gpuExecutionAccelerators: onnx?.gpuExecutionAccelerators,
    graphLevel: onnx?.graphLevel,
    name: modelName,
    version: String(version),
    inputs,
    outputs,
    config,
    instances,
    strict: options.strict ?? false,
    onUnrecoverable: server.onUnrecoverable,
    responseCache: config.responseCache ? server.responseCache : undefined,
    tracer: server.tracer,
    observeLatencies: server.observeLatencies,
    customMetrics: server.customMetrics?.(modelName, String(version)),
  });
  return attachChatTemplate(model, chatTemplate);
}
