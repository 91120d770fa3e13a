import * as fs from 'node:fs';
import type { SequenceInfo } from '../callable/callable';
import type { SequenceBatching, SequenceControlInit, SequenceStateInit } from '../config/sequence-batching';
import { TritonError } from '../base/errors';
import { DTYPES, type DataType, type TensorData } from '../tensor/dtype';
import { elementCount, type Tensor } from '../tensor/tensor';

/** What one slot of a sequence batch tells its control inputs. */
export interface SlotSignal {
  /** The request's sequence; undefined for a slot that holds no ready request (READY false). */
  readonly sequence: SequenceInfo | undefined;
}

/** A control tensor for one request: dims [1] per row ([1, 1] when the model batches). */
function controlTensor(control: SequenceControlInit, value: boolean, batched: boolean): Tensor {
  const shape = batched ? [1, 1] : [1];
  const i = value ? 1 : 0;
  if (control.boolFalseTrue) return { dtype: 'BOOL', shape, data: Uint8Array.of(control.boolFalseTrue[i] ? 1 : 0) };
  if (control.fp32FalseTrue) return { dtype: 'FP32', shape, data: Float32Array.of(control.fp32FalseTrue[i] as number) };
  return { dtype: 'INT32', shape, data: Int32Array.of(control.int32FalseTrue?.[i] ?? i) };
}

/** The CORRID control tensor: the correlation id in the configured datatype (0 or '' for an empty slot). */
function corridTensor(dtype: DataType, id: SequenceInfo['id'] | undefined, batched: boolean): Tensor {
  const shape = batched ? [1, 1] : [1];
  if (dtype === 'BYTES') return { dtype, shape, data: [new TextEncoder().encode(id === undefined ? '' : String(id))] };
  if (typeof id === 'string') {
    throw new TritonError('INVALID_ARGUMENT', `the model's CONTROL_SEQUENCE_CORRID is ${dtype}: sequence_id must be an integer, got the string '${id}'`);
  }
  const Array = DTYPES[dtype].array as unknown as { of(v: number | bigint): TensorData };
  const n = id ?? 0;
  return { dtype, shape, data: Array.of(dtype === 'UINT64' || dtype === 'INT64' ? BigInt(n) : Number(n)) };
}

/**
 * Builds the control inputs Triton feeds a sequence model: START, END and READY as the configured false/true
 * values, CORRID as the correlation id.
 */
export class SequenceControls {
  private readonly start;
  private readonly end;
  private readonly ready;
  private readonly corrid;

  constructor(
    config: SequenceBatching,
    private readonly batched: boolean,
  ) {
    this.start = config.control('CONTROL_SEQUENCE_START');
    this.end = config.control('CONTROL_SEQUENCE_END');
    this.ready = config.control('CONTROL_SEQUENCE_READY');
    this.corrid = config.control('CONTROL_SEQUENCE_CORRID');
  }

  /** Throws where a request's correlation id cannot be written in the configured CORRID datatype. */
  check(sequence: SequenceInfo): void {
    if (this.corrid) corridTensor(this.corrid.control.dataType as DataType, sequence.id, this.batched);
  }

  /** Adds the control tensors for one slot to `inputs`. */
  add(inputs: Record<string, Tensor>, slot: SlotSignal): void {
    const s = slot.sequence;
    if (this.start) inputs[this.start.name] = controlTensor(this.start.control, s?.start ?? false, this.batched);
    if (this.end) inputs[this.end.name] = controlTensor(this.end.control, s?.end ?? false, this.batched);
    if (this.ready) inputs[this.ready.name] = controlTensor(this.ready.control, s !== undefined, this.batched);
    if (this.corrid) inputs[this.corrid.name] = corridTensor(this.corrid.control.dataType as DataType, s?.id, this.batched);
  }
}

/** A sequence's implicit states, by state input name. */
export type StateTensors = Record<string, Tensor>;

/** Makes initial states and takes the next ones from a callable's outputs. */
export class SequenceStates {
  private readonly initial: Map<string, TensorData>;

  constructor(
    private readonly states: readonly SequenceStateInit[],
    private readonly batched: boolean,
    private readonly modelName: string,
  ) {
    this.initial = new Map();
    for (const s of states) {
      const init = s.initialState?.[0];
      if (init?.dataFile !== undefined) this.initial.set(s.inputName, readInitialState(s, init.dataFile, modelName));
    }
  }

  get empty(): boolean {
    return this.states.length === 0;
  }

  /** Names of the outputs that carry states (taken out of responses before they reach the client). */
  get outputNames(): readonly string[] {
    return this.states.map((s) => s.outputName);
  }

  /** A fresh state set: each state zeros, or the bytes of its initial-state file. */
  create(): StateTensors {
    const out: StateTensors = {};
    for (const s of this.states) {
      const shape = this.batched ? [1, ...s.dims] : [...s.dims];
      const init = this.initial.get(s.inputName);
      out[s.inputName] = { dtype: s.dtype, shape, data: init ? copyData(s.dtype, init) : zeros(s.dtype, elementCount(shape)) };
    }
    return out;
  }

  /**
   * The next states from one request's response: each state output, checked against its declared dtype and
   * element count, copied (the response may view a whole batch's buffer). Throws naming the state at fault.
   */
  next(response: Record<string, unknown>): StateTensors {
    const out: StateTensors = {};
    for (const s of this.states) {
      const value = response[s.outputName] as Partial<Tensor> | undefined;
      const shape = this.batched ? [1, ...s.dims] : [...s.dims];
      if (!value || value.data === undefined) {
        throw new TritonError('INFERENCE_FAILED', `model '${this.modelName}': the callable returned no state output '${s.outputName}' (state '${s.inputName}')`);
      }
      const dtype = value.dtype ?? s.dtype;
      if (dtype !== s.dtype || (value.data as TensorData).length !== elementCount(shape)) {
        throw new TritonError(
          'INFERENCE_FAILED',
          `model '${this.modelName}': state output '${s.outputName}' must be ${s.dtype} with ${elementCount(shape)} elements (dims [${s.dims.join(',')}]), got ${dtype} with ${(value.data as TensorData).length}`,
        );
      }
      out[s.inputName] = { dtype: s.dtype, shape, data: copyData(s.dtype, value.data as TensorData) };
    }
    return out;
  }
}

function zeros(dtype: DataType, count: number): TensorData {
  if (dtype === 'BYTES') return Array.from({ length: count }, () => new Uint8Array(0));
  const Ctor = DTYPES[dtype].array as unknown as new (n: number) => TensorData;
  return new Ctor(count);
}

function copyData(dtype: DataType, data: TensorData): TensorData {
  if (dtype === 'BYTES') return [...(data as Uint8Array[])];
  return (data as Exclude<TensorData, Uint8Array[]>).slice();
}

/** Zero-filled tensors shaped as `like`'s (a READY-false slot of a direct batch carries them). */
export function fillerInputs(like: Readonly<Record<string, Tensor>>): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  for (const [name, t] of Object.entries(like)) out[name] = { dtype: t.dtype, shape: [...t.shape], data: zeros(t.dtype, elementCount(t.shape)) };
  return out;
}

function readInitialState(s: SequenceStateInit, file: string, modelName: string): TensorData {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch (err) {
    throw new TritonError('INVALID_CONFIG', `model '${modelName}': cannot read the initial state file '${file}' of state '${s.inputName}': ${(err as Error).message}`);
  }
  const count = elementCount(s.dims);
  const size = DTYPES[s.dtype].size;
  if (size === 0 || bytes.length !== count * size) {
    throw new TritonError('INVALID_CONFIG', `model '${modelName}': initial state file '${file}' holds ${bytes.length} bytes; state '${s.inputName}' needs ${count * size} (${s.dtype}, dims [${s.dims.join(',')}])`);
  }
  const Ctor = DTYPES[s.dtype].array as unknown as new (b: ArrayBuffer, o: number, n: number) => TensorData;
  const copy = new Uint8Array(bytes).buffer;
  return new Ctor(copy, 0, count);
}
