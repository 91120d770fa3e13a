/**
 * The implicit states of the sequences whose slots belong to this worker, kept in the worker thread: a
 * request's state is put into its inputs before the callable runs and taken from its outputs after, so it
 * never crosses to the main thread between requests. Freed when the main thread says a sequence ended.
 */
import type { Request } from '../../callable/callable';
import { TritonError } from '../../base/errors';
import { DTYPES, type DataType, type TensorData } from '../../tensor/dtype';
import type { Tensor } from '../../tensor/tensor';
import { sequenceStateOf } from '../sequence-state-mark';

interface StateSpec {
  readonly input: string;
  readonly output: string;
  readonly dtype: DataType;
  readonly elements: number;
}

/** The `sequence_batching.state` entries of a model config JSON. */
function statesOf(modelConfig: unknown): StateSpec[] {
  const states = (modelConfig as { sequence_batching?: { state?: { input_name: string; output_name: string; data_type: string; dims: number[] }[] } })
    ?.sequence_batching?.state;
  return (states ?? []).map((s) => ({
    input: s.input_name,
    output: s.output_name,
    dtype: (Object.keys(DTYPES) as DataType[]).find((d) => DTYPES[d].configType === s.data_type) ?? 'FP32',
    elements: s.dims.reduce((a, b) => a * b, 1),
  }));
}

export class SequenceStateStore {
  private readonly states = new Map<number, Record<string, Tensor>>();
  private readonly specs: StateSpec[];

  constructor(modelConfig: unknown) {
    this.specs = statesOf(modelConfig);
  }

  /** States held (for tests and diagnostics). */
  get size(): number {
    return this.states.size;
  }

  /** Keeps the initial states a starting request brought, and gives the others their sequence's state. */
  before(requests: readonly Request[]): void {
    for (const r of requests) {
      const mark = sequenceStateOf(r);
      if (!mark) continue;
      const inputs = r.inputs as Record<string, Tensor>;
      if (mark.fresh) {
        const state: Record<string, Tensor> = {};
        for (const s of this.specs) state[s.input] = inputs[s.input] as Tensor;
        this.states.set(mark.id, state);
      } else {
        const state = this.states.get(mark.id);
        if (!state) throw new TritonError('INTERNAL', `the worker holds no state ${mark.id} for sequence ${String(r.sequence?.id)}`);
        Object.assign(inputs, state);
      }
    }
  }

  /** Takes each marked request's next state from its response (checked and copied) and removes it there. */
  after(requests: readonly Request[], responses: unknown): void {
    if (!Array.isArray(responses)) return;
    requests.forEach((r, i) => {
      const mark = sequenceStateOf(r);
      const response = responses[i] as Record<string, Partial<Tensor> | undefined> | undefined;
      if (!mark || !response || typeof response !== 'object') return;
      const next: Record<string, Tensor> = {};
      for (const s of this.specs) {
        const value = response[s.output];
        const data = value?.data as TensorData | undefined;
        const dtype = value?.dtype ?? s.dtype;
        if (!data || dtype !== s.dtype || data.length !== s.elements) {
          throw new TritonError(
            'INFERENCE_FAILED',
            `state output '${s.output}' must be ${s.dtype} with ${s.elements} elements, got ${data ? `${dtype} with ${data.length}` : 'none'}`,
          );
        }
        const shape = (r.inputs[s.input] as Tensor).shape;
        next[s.input] = { dtype: s.dtype, shape: [...shape], data: (s.dtype === 'BYTES' ? [...(data as Uint8Array[])] : (data as Exclude<TensorData, Uint8Array[]>).slice()) as TensorData };
        delete response[s.output];
      }
      this.states.set(mark.id, next);
    });
  }

  free(ids: readonly number[]): void {
    for (const id of ids) this.states.delete(id);
  }
}
