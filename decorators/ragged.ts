import { TritonError, type InstanceContext, type OutputValue, type Request, type Tensor } from '../lib';
import { concatBatch } from '../lib/tensor';
import type { DataType, TensorData } from '../lib/tensor/dtype';
import type { BatchInputKind } from '../lib/config/ragged-batching';
import { describeRequest } from './context';

/** What `@batch` does for a model with ragged inputs, read from its config (`allow_ragged_batch`, `batch_input`, `batch_output`). */
export interface RaggedPlan {
  /** Inputs handed over as one flat tensor of every request's elements. */
  readonly ragged: ReadonlySet<string>;
  readonly batchInputs: readonly { kind: BatchInputKind; target: string; dtype: DataType; source: string }[];
  /** Outputs scattered back by each request's tensor of the source input, by output name. */
  readonly scatter: ReadonlyMap<string, string>;
}

const DTYPE_OF: Record<string, DataType> = { TYPE_INT32: 'INT32', TYPE_FP32: 'FP32', TYPE_INT64: 'INT64' };

/** The ragged plan of the model an instance runs; undefined when it has no ragged input, batch input or output. */
export function raggedPlanOf(instance: InstanceContext | undefined): RaggedPlan | undefined {
  const config = instance?.modelConfig as
    | {
        input?: { name: string; allow_ragged_batch?: boolean }[];
        batch_input?: { kind: BatchInputKind; target_name: string[]; data_type: string; source_input: string[] }[];
        batch_output?: { target_name: string[]; source_input: string[] }[];
      }
    | undefined;
  if (!config) return undefined;
  const ragged = new Set((config.input ?? []).filter((i) => i.allow_ragged_batch).map((i) => i.name));
  const batchInputs = (config.batch_input ?? []).map((b) => ({
    kind: b.kind,
    target: b.target_name[0] as string,
    dtype: DTYPE_OF[b.data_type] ?? 'INT32',
    source: b.source_input[0] as string,
  }));
  const scatter = new Map<string, string>();
  for (const b of config.batch_output ?? []) for (const name of b.target_name) scatter.set(name, b.source_input[0] as string);
  if (ragged.size === 0 && batchInputs.length === 0 && scatter.size === 0) return undefined;
  return { ragged, batchInputs, scatter };
}

/** The requests' tensors of a ragged input as one flat tensor: every element, request after request. */
export function flatten(parts: readonly Tensor[], requests: readonly Request[], name: string, where: string): Tensor {
  const first = parts[0] as Tensor;
  parts.forEach((t, i) => {
    if (t.dtype !== first.dtype) {
      throw new TritonError('INFERENCE_FAILED', `${where}: ragged input "${name}": ${describeRequest(requests, 0)} sends ${first.dtype}, ${describeRequest(requests, i)} sends ${t.dtype}`);
    }
  });
  const joined = concatBatch(parts);
  return { dtype: joined.dtype, shape: [joined.data.length], data: joined.data };
}

function elementsOf(t: Tensor): number {
  return t.data.length;
}

function typed(dtype: DataType, values: readonly number[]): TensorData {
  if (dtype === 'INT64') return BigInt64Array.from(values, (v) => BigInt(v));
  if (dtype === 'FP32') return Float32Array.from(values);
  return Int32Array.from(values);
}

/** The batch inputs (Triton's `batch_input`) of a batch, by target name. */
export function batchInputTensors(requests: readonly Request[], plan: RaggedPlan): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  for (const b of plan.batchInputs) {
    const parts = requests.map((r, i) => {
      const t = r.inputs[b.source];
      if (!t) throw new TritonError('INFERENCE_FAILED', `@batch: batch input "${b.target}" needs input "${b.source}", missing from ${describeRequest(requests, i)}`);
      return t;
    });
    const counts = parts.map(elementsOf);
    let values: number[];
    let shape: number[];
    switch (b.kind) {
      case 'BATCH_ELEMENT_COUNT':
        values = counts;
        shape = [counts.length];
        break;
      case 'BATCH_ACCUMULATED_ELEMENT_COUNT':
      case 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO': {
        let sum = 0;
        values = counts.map((c) => (sum += c));
        if (b.kind === 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO') values.unshift(0);
        shape = [values.length];
        break;
      }
      case 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE': {
        // Only its shape speaks; its data is zeros.
        const max = Math.max(...counts);
        values = new Array<number>(max).fill(0);
        shape = [max];
        break;
      }
      case 'BATCH_ITEM_SHAPE':
      case 'BATCH_ITEM_SHAPE_FLATTEN': {
        // One entry per batch row: the row's dims without the batch dim.
        const rows = parts.flatMap((t) => Array.from({ length: t.shape[0] ?? 1 }, () => t.shape.slice(1)));
        values = rows.flat();
        const rank = parts[0]?.shape.length ? (parts[0].shape.length as number) - 1 : 0;
        shape = b.kind === 'BATCH_ITEM_SHAPE' ? [rows.length, rank] : [values.length];
        break;
      }
    }
    out[b.target] = { dtype: b.dtype, shape, data: typed(b.dtype, values) };
  }
  return out;
}

/**
 * Scatters a batch output (Triton's BATCH_SCATTER_WITH_INPUT_SHAPE) back to the requests: request i gets the
 * next elements, as many as its tensor of the source input holds, shaped as that tensor.
 */
export function scatterOutput(value: OutputValue, requests: readonly Request[], source: string, name: string): OutputValue[] {
  const data = value.data as ArrayLike<unknown> & { subarray?: (a: number, b: number) => unknown; slice: (a: number, b: number) => unknown };
  let offset = 0;
  return requests.map((r, i) => {
    const t = r.inputs[source];
    if (!t) throw new TritonError('INFERENCE_FAILED', `@batch: output "${name}" is scattered by input "${source}", missing from ${describeRequest(requests, i)}`);
    const n = elementsOf(t);
    if (offset + n > data.length) {
      throw new TritonError('INFERENCE_FAILED', `@batch: output "${name}" holds ${data.length} elements; scattering it by input "${source}" needs ${requests.reduce((s, q) => s + (q.inputs[source]?.data.length ?? 0), 0)}`);
    }
    const part = data.subarray ? data.subarray(offset, offset + n) : data.slice(offset, offset + n);
    offset += n;
    return { ...(value.dtype ? { dtype: value.dtype } : {}), shape: [...t.shape], data: part } as OutputValue;
  });
}
