import type { BatchInputInit, BatchInputKind, BatchOutputInit } from '../config/ragged-batching';
import { BATCH_INPUT_KINDS } from '../config/ragged-batching';
import type { DynamicBatcherInit, QueuePolicyInit } from '../config/model-config';
import type { ControlInputInit, SequenceBatchingInit, SequenceControlInit, SequenceControlKind, SequenceStateInit } from '../config/sequence-batching';
import { fromConfigType } from '../tensor/dtype';
import * as path from 'node:path';
import type { ConfigFields } from './config-fields';
import { fileInside } from './repository-paths';

// Reads a config.pbtxt's `dynamic_batching`, `sequence_batching`, `batch_input` and `batch_output` into their bind() forms.

function pair<T>(f: ConfigFields, field: string, kind: 'number' | 'boolean'): readonly [T, T] | undefined {
  const value = f.take(field);
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return undefined;
  if (!Array.isArray(value) || value.length !== 2 || !value.every((v) => typeof v === kind)) f.refuse(field, `must be a pair [false, true] of ${kind}s`);
  return [value[0] as T, value[1] as T];
}

function control(f: ConfigFields): SequenceControlInit {
  const kind = (f.string('kind') ?? 'CONTROL_SEQUENCE_START') as SequenceControlKind;
  const out: { -readonly [K in keyof SequenceControlInit]: SequenceControlInit[K] } = { kind };
  const int32 = pair<number>(f, 'int32_false_true', 'number');
  const fp32 = pair<number>(f, 'fp32_false_true', 'number');
  const bools = pair<boolean>(f, 'bool_false_true', 'boolean');
  if (int32) out.int32FalseTrue = int32;
  if (fp32) out.fp32FalseTrue = fp32;
  if (bools) out.boolFalseTrue = bools;
  const raw = f.string('data_type');
  if (raw !== undefined && raw !== 'TYPE_INVALID') {
    const dtype = fromConfigType(raw);
    if (!dtype) f.refuse('data_type', `'${raw}' is not a data type tstriton serves`);
    out.dataType = dtype;
  }
  f.done();
  return out;
}

/** `sequence_batching`, or undefined when the config has none. */
export function sequenceBatching(f: ConfigFields | undefined, modelDir: string): SequenceBatchingInit | undefined {
  // As Triton: an initial state's data_file lies in the model's initial_state/ folder.
  const initialStateDir = path.join(modelDir, 'initial_state');
  if (!f) return undefined;
  const init: { -readonly [K in keyof SequenceBatchingInit]: SequenceBatchingInit[K] } = {};
  const idle = f.integer('max_sequence_idle_microseconds', 0);
  if (idle !== undefined) init.maxSequenceIdleMicroseconds = idle;
  const direct = f.sub('direct');
  if (direct) {
    init.direct = { maxQueueDelayMicroseconds: direct.integer('max_queue_delay_microseconds', 0) ?? 0, minimumSlotUtilization: (direct.take('minimum_slot_utilization') as number | undefined) ?? 0 };
    direct.done();
  }
  const oldest = f.sub('oldest');
  if (oldest) {
    init.oldest = {
      maxCandidateSequences: oldest.integer('max_candidate_sequences', 0) ?? 0,
      preferredBatchSize: oldest.integers('preferred_batch_size') ?? [],
      maxQueueDelayMicroseconds: oldest.integer('max_queue_delay_microseconds', 0) ?? 0,
      preserveOrdering: oldest.boolean('preserve_ordering') ?? false,
    };
    oldest.done();
  }
  init.controlInput = f.messages('control_input').map((c): ControlInputInit => {
    const name = c.string('name') ?? '';
    const controls = c.messages('control').map(control);
    c.done();
    return { name, control: controls };
  });
  init.state = f.messages('state').map((s): SequenceStateInit => {
    const inputName = s.string('input_name') ?? '';
    const outputName = s.string('output_name') ?? '';
    const dtype = s.dataType('data_type');
    const dims = s.integers('dims') ?? [];
    const initialState = s.messages('initial_state').map((i) => {
      const entry = {
        name: i.string('name') ?? '',
        dtype: i.dataType('data_type'),
        dims: i.integers('dims') ?? [],
        ...(i.boolean('zero_data') ? { zeroData: true } : {}),
      };
      const file = i.string('data_file');
      i.done();
      if (file === undefined) return entry;
      const inside = fileInside(modelDir, initialStateDir, file);
      return 'path' in inside ? { ...entry, dataFile: inside.path } : i.refuse('data_file', inside.reason);
    });
    s.takeDefault('use_same_buffer_for_input_output', false);
    s.takeDefault('use_growable_memory', false);
    s.done();
    return { inputName, outputName, dtype, dims, initialState };
  });
  f.takeDefault('iterative_sequence', false);
  f.done();
  return init;
}

/** `batch_input` entries. */
export function batchInputs(f: ConfigFields): BatchInputInit[] {
  return f.messages('batch_input').map((b) => {
    const kind = (b.string('kind') ?? 'BATCH_ELEMENT_COUNT') as BatchInputKind;
    if (!BATCH_INPUT_KINDS.includes(kind)) b.refuse('kind', `must be one of ${BATCH_INPUT_KINDS.join(', ')}`);
    const targets = b.take('target_name');
    const sources = b.take('source_input');
    if (!Array.isArray(targets) || targets.length !== 1 || typeof targets[0] !== 'string') b.refuse('target_name', 'must name one input');
    if (!Array.isArray(sources) || sources.length !== 1 || typeof sources[0] !== 'string') b.refuse('source_input', 'must name one input');
    const dtype = b.dataType('data_type');
    b.done();
    return { kind, targetName: (targets as string[])[0] as string, dtype, sourceInput: (sources as string[])[0] as string };
  });
}

/** `batch_output` entries. */
export function batchOutputs(f: ConfigFields): BatchOutputInit[] {
  return f.messages('batch_output').map((b) => {
    const kind = b.string('kind') ?? 'BATCH_SCATTER_WITH_INPUT_SHAPE';
    if (kind !== 'BATCH_SCATTER_WITH_INPUT_SHAPE') b.refuse('kind', 'must be BATCH_SCATTER_WITH_INPUT_SHAPE');
    const targets = b.take('target_name');
    const sources = b.take('source_input');
    if (!Array.isArray(targets) || !targets.every((t) => typeof t === 'string')) b.refuse('target_name', 'must name outputs');
    if (!Array.isArray(sources) || sources.length !== 1 || typeof sources[0] !== 'string') b.refuse('source_input', 'must name one input');
    b.done();
    return { kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', targetName: targets as string[], sourceInput: (sources as string[])[0] as string };
  });
}

export function dynamicBatcher(f: ConfigFields | undefined): DynamicBatcherInit | undefined {
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
