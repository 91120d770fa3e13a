import type { BatchInputInit, BatchInputKind, BatchOutputInit } from '../config/ragged-batching';
import { BATCH_INPUT_KINDS } from '../config/ragged-batching';
import type { ControlInputInit, SequenceBatchingInit, SequenceControlInit, SequenceControlKind, SequenceStateInit } from '../config/sequence-batching';
import { fromConfigType, type DataType } from '../tensor/dtype';
import * as path from 'node:path';
import type { ConfigFields } from './config-fields';
import { fileInside } from './repository-paths';

// Reads a config.pbtxt's `sequence_batching`, `batch_input` and `batch_output` into their bind() forms.

function dtypeOf(f: ConfigFields, field: string): DataType {
  const raw = f.string(field);
  const dtype = raw === undefined ? undefined : fromConfigType(raw);
  if (!dtype) f.refuse(field, raw === undefined ? 'is required' : `'${raw}' is not a data type tstriton serves`);
  return dtype as DataType;
}

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
    const dtype = dtypeOf(s, 'data_type');
    const dims = s.integers('dims') ?? [];
    const initialState = s.messages('initial_state').map((i) => {
      const entry = {
        name: i.string('name') ?? '',
        dtype: dtypeOf(i, 'data_type'),
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
    const dtype = dtypeOf(b, 'data_type');
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
