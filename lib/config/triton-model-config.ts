import { DTYPES } from '../tensor/dtype';
import type { ModelConfig, QueuePolicy } from './model-config';
import { sequenceBatchingJson } from './sequence-batching';
import { batchInputJson, batchOutputJson } from './ragged-batching';
import { TritonError } from '../base/errors';
import type { NamedTensorSpec } from './tensor-spec';

/** One instance group as the generated config reports it. */
export interface InstanceGroupDescription {
  kind: 'KIND_CPU' | 'KIND_GPU' | 'KIND_MODEL';
  count: number;
  gpus: number[];
}

/** Everything needed to generate a model's Triton config. */
export interface ModelDescription {
  name: string;
  platform: string;
  backend: string;
  inputs: readonly NamedTensorSpec[];
  outputs: readonly NamedTensorSpec[];
  config: ModelConfig;
  instanceGroups: readonly InstanceGroupDescription[];
  defaultModelFilename?: string;
  /**
   * `optimization.execution_accelerators.gpu_execution_accelerator`, by name: the onnxruntime providers of the GPU
   * instances (`tensorrt`, `cuda`, `webgpu`).
   */
  gpuExecutionAccelerators?: readonly string[];
  /** `optimization.graph.level`, when set (ONNX models: -1 basic, 1 extended, 2 disabled). */
  graphLevel?: number;
  /** Extra top-level fields (e.g. `ensemble_scheduling`). */
  extra?: Record<string, unknown>;
}

/** Triton's model config in its JSON form (snake_case fields, enum names). */
export type ModelConfigJson = Record<string, unknown>;

/**
 * Generates the model config JSON exactly as Triton's `GET /v2/models/{m}/config` prints it: every scalar
 * and repeated field present, sub-messages only when set, 64-bit integers as numbers, and the
 * normalisations Triton applies (version policy, preferred batch size, instance group names).
 */
export function buildModelConfigJson(d: ModelDescription): ModelConfigJson {
  const c = d.config;
  const maxBatchSize = c.effectiveMaxBatchSize;
  for (const b of [...c.batchInput, ...c.batchOutput]) {
    if (!d.inputs.some((s) => s.name === b.sourceInput)) {
      throw new TritonError('INVALID_CONFIG', `invalid ModelConfig: ${b.kind} names source input '${b.sourceInput}', which model '${d.name}' does not have`);
    }
  }
  const json: ModelConfigJson = {
    name: d.name,
    platform: d.platform,
    backend: d.backend,
    runtime: '',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: maxBatchSize,
    input: d.inputs.map((s) => ({
      name: s.name,
      data_type: DTYPES[s.dtype].configType,
      format: 'FORMAT_NONE',
      dims: [...s.shape],
      ...(s.reshape ? { reshape: { shape: [...s.reshape] } } : {}),
      is_shape_tensor: false,
      allow_ragged_batch: s.allowRaggedBatch ?? false,
      optional: s.optional ?? false,
      is_non_linear_format_io: false,
    })),
    output: d.outputs.map((s) => ({
      name: s.name,
      data_type: DTYPES[s.dtype].configType,
      dims: [...s.shape],
      ...(s.reshape ? { reshape: { shape: [...s.reshape] } } : {}),
      label_filename: '',
      is_shape_tensor: false,
      is_non_linear_format_io: false,
    })),
    batch_input: c.batchInput.map(batchInputJson),
    batch_output: c.batchOutput.map(batchOutputJson),
    optimization: {
      ...(d.graphLevel !== undefined ? { graph: { level: d.graphLevel } } : {}),
      priority: 'PRIORITY_DEFAULT',
      ...(d.gpuExecutionAccelerators && d.gpuExecutionAccelerators.length > 0
        ? { execution_accelerators: { gpu_execution_accelerator: d.gpuExecutionAccelerators.map((name) => ({ name, parameters: {} })), cpu_execution_accelerator: [] } }
        : {}),
      input_pinned_memory: { enable: true },
      output_pinned_memory: { enable: true },
      gather_kernel_buffer_threshold: 0,
      eager_batching: false,
    },
  };
  if (c.sequenceBatching) {
    json.sequence_batching = sequenceBatchingJson(c.sequenceBatching, maxBatchSize);
  } else if (c.batcher && maxBatchSize > 0) {
    const b = c.batcher;
    const dynamic: Record<string, unknown> = {
      preferred_batch_size: b.preferredBatchSize.length > 0 ? [...b.preferredBatchSize] : [maxBatchSize],
      max_queue_delay_microseconds: b.maxQueueDelayMicroseconds,
      preserve_ordering: b.preserveOrdering,
      priority_levels: b.priorityLevels,
      default_priority_level: b.defaultPriorityLevel,
      default_queue_policy: queuePolicyJson(b.defaultQueuePolicy),
      priority_queue_policy: Object.fromEntries(
        Object.entries(b.priorityQueuePolicy).map(([level, p]) => [level, queuePolicyJson(p)]),
      ),
    };
    json.dynamic_batching = dynamic;
  }
  json.instance_group = d.instanceGroups.map((g, i) => ({
    name: d.instanceGroups.length === 1 ? d.name : `${d.name}_${i}`,
    kind: g.kind,
    count: g.count,
    gpus: [...g.gpus],
    secondary_devices: [],
    profile: [],
    passive: false,
    host_policy: '',
  }));
  json.default_model_filename = d.defaultModelFilename ?? '';
  json.cc_model_filenames = {};
  json.metric_tags = {};
  json.parameters = Object.fromEntries(Object.entries(c.parameters).map(([k, v]) => [k, { string_value: v }]));
  json.model_warmup = c.warmup.map((w) => ({
    name: w.name,
    batch_size: w.batchSize,
    inputs: Object.fromEntries(
      Object.entries(w.inputs).map(([name, input]) => [
        name,
        {
          data_type: DTYPES[input.dtype].configType,
          dims: [...input.dims],
          ...(input.data === 'random' ? { random_data: true } : { zero_data: true }),
        },
      ]),
    ),
    count: w.count,
  }));
  if (c.decoupled) json.model_transaction_policy = { decoupled: true };
  if (c.responseCache) json.response_cache = { enable: true };
  Object.assign(json, d.extra ?? {});
  return json;
}

function queuePolicyJson(p: QueuePolicy): Record<string, unknown> {
  return {
    timeout_action: p.timeoutAction,
    default_timeout_microseconds: p.defaultTimeoutMicroseconds,
    allow_timeout_override: p.allowTimeoutOverride,
    max_queue_size: p.maxQueueSize,
  };
}

/** Fields whose string values are protobuf enum names, printed bare in text format. */
const ENUM_FIELDS = new Set(['data_type', 'format', 'kind', 'priority', 'timeout_action']);
/** Fields that are protobuf maps (printed as repeated key/value entries). */
const MAP_FIELDS = new Set(['parameters', 'cc_model_filenames', 'metric_tags', 'priority_queue_policy', 'inputs', 'input_map', 'output_map']);

/**
 * Renders a model config JSON (as built above) as `config.pbtxt` protobuf text. Fields at their default
 * (false, 0, "", empty lists and maps) are left out, as protobuf text format does.
 */
export function toPbtxt(json: ModelConfigJson): string {
  const lines: string[] = [];
  writeFields(json, 0, lines);
  return `${lines.join('\n')}\n`;
}

function writeFields(obj: Record<string, unknown>, depth: number, out: string[]): void {
  const pad = '  '.repeat(depth);
  for (const [key, value] of Object.entries(obj)) {
    if (isDefault(value)) continue;
    if (MAP_FIELDS.has(key) && isPlainObject(value)) {
      for (const [k, v] of Object.entries(value)) {
        out.push(`${pad}${key} {`);
        out.push(`${pad}  key: ${/^\d+$/.test(k) && key === 'priority_queue_policy' ? k : JSON.stringify(k)}`);
        if (isPlainObject(v)) {
          out.push(`${pad}  value {`);
          writeFields(v, depth + 2, out);
          out.push(`${pad}  }`);
        } else {
          out.push(`${pad}  value: ${scalar(key, v)}`);
        }
        out.push(`${pad}}`);
      }
    } else if (Array.isArray(value)) {
      if (value.every((v) => !isPlainObject(v))) {
        out.push(`${pad}${key}: [ ${value.map((v) => scalar(key, v)).join(', ')} ]`);
      } else {
        for (const item of value) {
          out.push(`${pad}${key} {`);
          writeFields(item as Record<string, unknown>, depth + 1, out);
          out.push(`${pad}}`);
        }
      }
    } else if (isPlainObject(value)) {
      out.push(`${pad}${key} {`);
      writeFields(value, depth + 1, out);
      out.push(`${pad}}`);
    } else {
      out.push(`${pad}${key}: ${scalar(key, value)}`);
    }
  }
}

function scalar(key: string, v: unknown): string {
  if (typeof v === 'string') return ENUM_FIELDS.has(key) ? v : JSON.stringify(v);
  return String(v);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isDefault(v: unknown): boolean {
  // TYPE_INVALID is an unset data_type (a control other than CORRID).
  if (v === false || v === 0 || v === '' || v === null || v === undefined || v === 'TYPE_INVALID') return true;
  if (Array.isArray(v)) return v.length === 0;
  return false;
}
