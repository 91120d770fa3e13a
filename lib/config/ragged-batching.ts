import { TritonError } from '../base/errors';
import { DTYPES, type DataType } from '../tensor/dtype';

/** What a batch input holds, as Triton's `BatchInput.Kind`. */
export type BatchInputKind =
  | 'BATCH_ELEMENT_COUNT'
  | 'BATCH_ACCUMULATED_ELEMENT_COUNT'
  | 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO'
  | 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE'
  | 'BATCH_ITEM_SHAPE'
  | 'BATCH_ITEM_SHAPE_FLATTEN';

export const BATCH_INPUT_KINDS: readonly BatchInputKind[] = [
  'BATCH_ELEMENT_COUNT',
  'BATCH_ACCUMULATED_ELEMENT_COUNT',
  'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO',
  'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE',
  'BATCH_ITEM_SHAPE',
  'BATCH_ITEM_SHAPE_FLATTEN',
];

/** An input the batcher computes from the batch it formed, as Triton's `batch_input`. */
export interface BatchInputInit {
  kind: BatchInputKind;
  /** The input the callable receives it as (Triton takes one name). */
  targetName: string;
  /** INT32, FP32 or INT64. */
  dtype: DataType;
  /** The (ragged) input it describes. */
  sourceInput: string;
}

/** An output the batcher scatters back to the requests, as Triton's `batch_output`. */
export interface BatchOutputInit {
  kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE';
  /** The outputs scattered this way. */
  targetName: readonly string[];
  /** Each request's part has the shape of its own tensor of this input. */
  sourceInput: string;
}

const BATCH_INPUT_TYPES: readonly DataType[] = ['INT32', 'FP32', 'INT64'];

/** Checks and copies `batchInput` entries; the names they refer to are checked against the model's inputs. */
export function toBatchInputs(raw: unknown, inputNames: readonly string[] | undefined): BatchInputInit[] {
  const fail = (msg: string): never => {
    throw new TritonError('INVALID_CONFIG', `invalid ModelConfig: batchInput${msg}`);
  };
  if (!Array.isArray(raw)) return fail(' must be an array');
  return raw.map((b: Partial<BatchInputInit>, i) => {
    if (typeof b !== 'object' || b === null) fail(`[${i}] must be an object`);
    if (!BATCH_INPUT_KINDS.includes(b.kind as BatchInputKind)) fail(`[${i}].kind must be one of ${BATCH_INPUT_KINDS.join(', ')}`);
    if (typeof b.targetName !== 'string' || b.targetName === '') fail(`[${i}].targetName must be a non-empty string`);
    if (!BATCH_INPUT_TYPES.includes(b.dtype as DataType)) fail(`[${i}].dtype must be one of ${BATCH_INPUT_TYPES.join(', ')}`);
    if (typeof b.sourceInput !== 'string' || (inputNames && !inputNames.includes(b.sourceInput))) fail(`[${i}].sourceInput must name an input of the model`);
    return { kind: b.kind, targetName: b.targetName, dtype: b.dtype, sourceInput: b.sourceInput } as BatchInputInit;
  });
}

/** Checks and copies `batchOutput` entries. */
export function toBatchOutputs(raw: unknown): BatchOutputInit[] {
  const fail = (msg: string): never => {
    throw new TritonError('INVALID_CONFIG', `invalid ModelConfig: batchOutput${msg}`);
  };
  if (!Array.isArray(raw)) return fail(' must be an array');
  return raw.map((b: Partial<BatchOutputInit>, i) => {
    if (typeof b !== 'object' || b === null) fail(`[${i}] must be an object`);
    if (b.kind !== 'BATCH_SCATTER_WITH_INPUT_SHAPE') fail(`[${i}].kind must be BATCH_SCATTER_WITH_INPUT_SHAPE`);
    if (!Array.isArray(b.targetName) || b.targetName.length === 0 || !b.targetName.every((n) => typeof n === 'string')) fail(`[${i}].targetName must be a list of output names`);
    if (typeof b.sourceInput !== 'string' || b.sourceInput === '') fail(`[${i}].sourceInput must name an input`);
    return { kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', targetName: [...(b.targetName as string[])], sourceInput: b.sourceInput } as BatchOutputInit;
  });
}

/** `batch_input` as Triton prints it. */
export function batchInputJson(b: BatchInputInit): Record<string, unknown> {
  return { kind: b.kind, target_name: [b.targetName], data_type: DTYPES[b.dtype].configType, source_input: [b.sourceInput] };
}

/** `batch_output` as Triton prints it. */
export function batchOutputJson(b: BatchOutputInit): Record<string, unknown> {
  return { target_name: [...b.targetName], kind: b.kind, source_input: [b.sourceInput] };
}
