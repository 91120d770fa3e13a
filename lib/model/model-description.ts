import { buildModelConfigJson, type ModelConfigJson, type ModelDescription } from '../config/triton-model-config';
import type { NamedTensorSpec } from '../config/tensor-spec';
import type { Instance } from '../instances/instance';
import { GPU_PROVIDERS, type GpuProvider } from '../onnx/onnx-runner';
import type { ModelMetadata } from '../protocol/model-metadata';


/** What a model's description is made of (a `ModelInit` is one). */
export interface DescribedModel {
  readonly name: string;
  readonly version: string;
  readonly inputs: readonly NamedTensorSpec[];
  readonly outputs: readonly NamedTensorSpec[];
  readonly config: ModelDescription['config'];
  readonly instances: readonly Instance[];
  readonly platform?: string;
  readonly backend?: string;
  readonly defaultModelFilename?: string;
  readonly instanceGroups?: ModelDescription['instanceGroups'];
  readonly gpuExecutionAccelerators?: readonly string[];
  readonly graphLevel?: number;
  readonly configExtra?: Record<string, unknown>;
}

/** A model's config (`GET /v2/models/{m}/config`) and metadata (`GET /v2/models/{m}`), built once at bind. */
export function describeModel(init: DescribedModel, maxBatchSize: number): { configJson: ModelConfigJson; metadata: ModelMetadata } {
  const description: ModelDescription = {
    name: init.name,
    platform: init.platform ?? '',
    backend: init.backend ?? 'tstriton',
    defaultModelFilename: init.defaultModelFilename,
    inputs: init.inputs,
    outputs: init.outputs,
    config: init.config,
    instanceGroups: init.instanceGroups ?? groupInstances(init.instances),
    gpuExecutionAccelerators: reportedAccelerators(init),
    graphLevel: init.graphLevel,
    extra: init.configExtra,
  };
  const batchDim = maxBatchSize > 0 ? [-1] : [];
  const specJson = (s: NamedTensorSpec) => ({ name: s.name, datatype: s.dtype, shape: [...batchDim, ...s.shape] });
  const metadata: ModelMetadata = {
    name: init.name,
    versions: [init.version],
    platform: description.platform || description.backend,
    inputs: init.inputs.map(specJson),
    outputs: init.outputs.map(specJson),
  };
  return { configJson: buildModelConfigJson(description), metadata };
}

/**
 * The GPU accelerators the config reports: those of the binding until the instances start, then the accelerators
 * asked for (`tensorrt`) followed by the execution providers the GPU instances reported, in instance order.
 */
function reportedAccelerators(init: DescribedModel): readonly string[] | undefined {
  const reported = init.instances.filter((i) => i.device.kind === 'gpu').map((i) => i.report?.executionProvider);
  if (reported.length === 0 || reported.some((p) => p === undefined)) return init.gpuExecutionAccelerators;
  const providers = [...new Set(reported as string[])];
  return [...(init.gpuExecutionAccelerators ?? []).filter((a) => !GPU_PROVIDERS.includes(a as GpuProvider)), ...providers];
}

function groupInstances(instances: readonly Instance[]): ModelDescription['instanceGroups'] {
  const cpu = instances.filter((i) => i.device.kind === 'cpu').length;
  const gpus = instances.filter((i) => i.device.kind === 'gpu').map((i) => i.device.id);
  const groups: { kind: 'KIND_CPU' | 'KIND_GPU'; count: number; gpus: number[] }[] = [];
  if (cpu > 0) groups.push({ kind: 'KIND_CPU', count: cpu, gpus: [] });
  if (gpus.length > 0) {
    const distinct = [...new Set(gpus)].sort((a, b) => a - b);
    groups.push({ kind: 'KIND_GPU', count: gpus.length / distinct.length, gpus: distinct });
  }
  return groups;
}
