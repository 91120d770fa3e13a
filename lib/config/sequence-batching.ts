import { TritonError } from '../base/errors';
import { DATA_TYPES, DTYPES, type DataType } from '../tensor/dtype';
import { assignKnown } from './validate';

/** The sequence events a control input can signal, as Triton's `ModelSequenceBatching.Control.Kind`. */
export type SequenceControlKind = 'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_READY' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_CORRID';

const CONTROL_KINDS: readonly SequenceControlKind[] = ['CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_READY', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_CORRID'];

/**
 * One control: which event, and how its false/true values are written (exactly one of `int32FalseTrue`,
 * `fp32FalseTrue`, `boolFalseTrue`), or for CORRID the `dataType` of the correlation id (UINT64, INT64,
 * UINT32, INT32 or BYTES for string ids).
 */
export interface SequenceControlInit {
  kind: SequenceControlKind;
  int32FalseTrue?: readonly [number, number];
  fp32FalseTrue?: readonly [number, number];
  boolFalseTrue?: readonly [boolean, boolean];
  dataType?: DataType;
}

/** A model input that carries a control, as Triton's `ControlInput`. */
export interface ControlInputInit {
  name: string;
  control: readonly SequenceControlInit[];
}

/** The initial value of an implicit state: zeros, or the raw little-endian bytes of a file. */
export interface InitialStateInit {
  name: string;
  dtype: DataType;
  dims: readonly number[];
  /** Zeros (the default). */
  zeroData?: boolean;
  /** A file holding the state's raw bytes (Triton reads it from the model's `initial_state/` folder). */
  dataFile?: string;
}

/** An implicit state carried between the requests of a sequence, as Triton's `State`. */
export interface SequenceStateInit {
  /** The input the callable reads the state from. */
  inputName: string;
  /** The output the callable writes the next state to. */
  outputName: string;
  dtype: DataType;
  /** Dims without the batch dim. */
  dims: readonly number[];
  initialState?: readonly InitialStateInit[];
}

/** Triton's `StrategyDirect`: each sequence owns one batch slot for its life. */
export interface DirectStrategyInit {
  maxQueueDelayMicroseconds?: number;
  minimumSlotUtilization?: number;
}

/** Triton's `StrategyOldest`: the oldest sequences with a request waiting batch together. */
export interface OldestStrategyInit {
  /** Sequences one instance holds at once; 0 means `maxBatchSize`. */
  maxCandidateSequences?: number;
  preferredBatchSize?: readonly number[];
  maxQueueDelayMicroseconds?: number;
  preserveOrdering?: boolean;
}

/** Plain-object form of SequenceBatching. */
export interface SequenceBatchingInit {
  /** `direct` (the default) or `oldest`; give at most one. */
  direct?: DirectStrategyInit;
  oldest?: OldestStrategyInit;
  /** A sequence with no request for this long is ended and its slot and state freed (Triton's default: 1 s). */
  maxSequenceIdleMicroseconds?: number;
  controlInput?: readonly ControlInputInit[];
  state?: readonly SequenceStateInit[];
}

const KEYS = ['direct', 'oldest', 'maxSequenceIdleMicroseconds', 'controlInput', 'state'] as const;

/** Triton's default `max_sequence_idle_microseconds`. */
export const SEQUENCE_IDLE_DEFAULT_MICROSECONDS = 1_000_000;

const CORRID_TYPES: readonly DataType[] = ['UINT64', 'INT64', 'UINT32', 'INT32', 'BYTES'];

/** Sequence (stateful) batcher settings, as Triton's `sequence_batching`. */
export class SequenceBatching {
  direct: Required<DirectStrategyInit> | undefined;
  oldest: Required<OldestStrategyInit> | undefined;
  maxSequenceIdleMicroseconds = SEQUENCE_IDLE_DEFAULT_MICROSECONDS;
  controlInput: ControlInputInit[] = [];
  state: SequenceStateInit[] = [];

  constructor(init?: SequenceBatchingInit) {
    const raw: Record<string, unknown> = {};
    assignKnown(raw as { [K in (typeof KEYS)[number]]?: unknown }, init, KEYS, 'SequenceBatching');
    const fail = (msg: string): never => {
      throw new TritonError('INVALID_CONFIG', `invalid SequenceBatching: ${msg}`);
    };
    if (raw.direct !== undefined && raw.oldest !== undefined) fail('give one strategy, direct or oldest, not both');
    if (raw.oldest !== undefined) {
      const o = object(raw.oldest, 'oldest', fail) as OldestStrategyInit;
      this.oldest = {
        maxCandidateSequences: nonNegative(o.maxCandidateSequences ?? 0, 'oldest.maxCandidateSequences', fail),
        preferredBatchSize: [...(o.preferredBatchSize ?? [])].map((n) => positive(n, 'oldest.preferredBatchSize', fail)),
        maxQueueDelayMicroseconds: nonNegative(o.maxQueueDelayMicroseconds ?? 0, 'oldest.maxQueueDelayMicroseconds', fail),
        preserveOrdering: o.preserveOrdering ?? false,
      };
    } else {
      const d = object(raw.direct ?? {}, 'direct', fail) as DirectStrategyInit;
      this.direct = {
        maxQueueDelayMicroseconds: nonNegative(d.maxQueueDelayMicroseconds ?? 0, 'direct.maxQueueDelayMicroseconds', fail),
        minimumSlotUtilization: d.minimumSlotUtilization ?? 0,
      };
    }
    const idle = raw.maxSequenceIdleMicroseconds ?? 0;
    // As Triton: 0 (unset) means the default.
    this.maxSequenceIdleMicroseconds = nonNegative(idle, 'maxSequenceIdleMicroseconds', fail) || SEQUENCE_IDLE_DEFAULT_MICROSECONDS;
    this.controlInput = (array(raw.controlInput ?? [], 'controlInput', fail) as ControlInputInit[]).map((c, i) => controlInput(c, i, fail));
    this.state = (array(raw.state ?? [], 'state', fail) as SequenceStateInit[]).map((s, i) => stateOf(s, i, fail));
    const kinds = this.controlInput.flatMap((c) => c.control.map((k) => k.kind));
    for (const kind of CONTROL_KINDS) if (kinds.filter((k) => k === kind).length > 1) fail(`${kind} is given more than once`);
  }

  /** The control input that carries `kind`, if any. */
  control(kind: SequenceControlKind): { name: string; control: SequenceControlInit } | undefined {
    for (const input of this.controlInput) {
      const control = input.control.find((c) => c.kind === kind);
      if (control) return { name: input.name, control };
    }
    return undefined;
  }
}

function controlInput(c: ControlInputInit, i: number, fail: (m: string) => never): ControlInputInit {
  const where = `controlInput[${i}]`;
  object(c, where, fail);
  if (typeof c.name !== 'string' || c.name === '') fail(`${where}.name must be a non-empty string`);
  const control = (array(c.control, `${where}.control`, fail) as SequenceControlInit[]).map((k, j) => {
    const at = `${where}.control[${j}]`;
    object(k, at, fail);
    if (!CONTROL_KINDS.includes(k.kind)) fail(`${at}.kind must be one of ${CONTROL_KINDS.join(', ')}`);
    const forms = [k.int32FalseTrue, k.fp32FalseTrue, k.boolFalseTrue].filter((v) => v !== undefined);
    if (k.kind === 'CONTROL_SEQUENCE_CORRID') {
      if (forms.length > 0) fail(`${at}: CONTROL_SEQUENCE_CORRID takes a dataType, not false/true values`);
      if (k.dataType === undefined || !CORRID_TYPES.includes(k.dataType)) fail(`${at}.dataType must be one of ${CORRID_TYPES.join(', ')}`);
    } else {
      if (forms.length !== 1) fail(`${at}: ${k.kind} must give exactly one of int32FalseTrue, fp32FalseTrue, boolFalseTrue`);
      if ((forms[0] as readonly unknown[]).length !== 2) fail(`${at}: the false/true values must be a pair [false, true]`);
      if (k.dataType !== undefined) fail(`${at}.dataType is only for CONTROL_SEQUENCE_CORRID`);
    }
    return { ...k };
  });
  if (control.length === 0) fail(`${where}.control must hold at least one control`);
  return { name: c.name, control };
}

function stateOf(s: SequenceStateInit, i: number, fail: (m: string) => never): SequenceStateInit {
  const where = `state[${i}]`;
  object(s, where, fail);
  if (typeof s.inputName !== 'string' || s.inputName === '') fail(`${where}.inputName must be a non-empty string`);
  if (typeof s.outputName !== 'string' || s.outputName === '') fail(`${where}.outputName must be a non-empty string`);
  if (!DATA_TYPES.includes(s.dtype)) fail(`${where}.dtype must be one of ${DATA_TYPES.join(', ')}`);
  const dims = array(s.dims, `${where}.dims`, fail) as number[];
  for (const d of dims) if (!Number.isInteger(d) || d < 1) fail(`${where}.dims must be positive integers (a state has a fixed shape)`);
  const initialState = (array(s.initialState ?? [], `${where}.initialState`, fail) as InitialStateInit[]).map((init, j) => {
    const at = `${where}.initialState[${j}]`;
    object(init, at, fail);
    if (typeof init.name !== 'string' || init.name === '') fail(`${at}.name must be a non-empty string`);
    if (init.dtype !== s.dtype) fail(`${at}.dtype must be the state's dtype ${s.dtype}`);
    if (init.zeroData && init.dataFile !== undefined) fail(`${at}: give zeroData or dataFile, not both`);
    return { ...init, dims: [...init.dims] };
  });
  if (initialState.length > 1) fail(`${where}.initialState holds at most one entry`);
  return { inputName: s.inputName, outputName: s.outputName, dtype: s.dtype, dims: [...dims], initialState };
}

function object(v: unknown, where: string, fail: (m: string) => never): object {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(`${where} must be an object`);
  return v as object;
}

function array(v: unknown, where: string, fail: (m: string) => never): unknown[] {
  if (!Array.isArray(v)) fail(`${where} must be an array`);
  return v as unknown[];
}

function nonNegative(v: unknown, where: string, fail: (m: string) => never): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) fail(`${where} must be a non-negative integer`);
  return v as number;
}

function positive(v: unknown, where: string, fail: (m: string) => never): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) fail(`${where} must hold positive integers`);
  return v as number;
}

/** `sequence_batching` as Triton prints it in the model config JSON (fields in proto order, defaults filled in). */
export function sequenceBatchingJson(s: SequenceBatching, maxBatchSize: number): Record<string, unknown> {
  const json: Record<string, unknown> = {
    max_sequence_idle_microseconds: s.maxSequenceIdleMicroseconds,
    control_input: s.controlInput.map((c) => ({
      name: c.name,
      control: c.control.map((k) => ({
        kind: k.kind,
        int32_false_true: [...(k.int32FalseTrue ?? [])],
        fp32_false_true: [...(k.fp32FalseTrue ?? [])],
        bool_false_true: [...(k.boolFalseTrue ?? [])],
        data_type: k.dataType ? DTYPES[k.dataType].configType : 'TYPE_INVALID',
      })),
    })),
  };
  if (s.oldest) {
    const o = s.oldest;
    json.oldest = {
      max_candidate_sequences: o.maxCandidateSequences,
      // As Triton: no preferred size means max_batch_size.
      preferred_batch_size: o.preferredBatchSize.length > 0 ? [...o.preferredBatchSize] : maxBatchSize > 0 ? [maxBatchSize] : [],
      max_queue_delay_microseconds: o.maxQueueDelayMicroseconds,
      preserve_ordering: o.preserveOrdering,
    };
  } else {
    const d = s.direct ?? { maxQueueDelayMicroseconds: 0, minimumSlotUtilization: 0 };
    json.direct = { max_queue_delay_microseconds: d.maxQueueDelayMicroseconds, minimum_slot_utilization: d.minimumSlotUtilization };
  }
  json.state = s.state.map((st) => ({
    input_name: st.inputName,
    output_name: st.outputName,
    data_type: DTYPES[st.dtype].configType,
    dims: [...st.dims],
    initial_state: (st.initialState ?? []).map((i) => ({
      data_type: DTYPES[i.dtype].configType,
      dims: [...i.dims],
      ...(i.dataFile !== undefined ? { data_file: i.dataFile } : { zero_data: true }),
      name: i.name,
    })),
    use_same_buffer_for_input_output: false,
    use_growable_memory: false,
  }));
  json.iterative_sequence = false;
  return json;
}
