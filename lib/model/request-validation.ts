import type { NamedTensorSpec } from '../config/tensor-spec';
import { invalidArgument } from '../base/errors';
import type { Tensor } from '../tensor/tensor';
import type { InferenceRequest } from './inference';

/**
 * Checks a request against a model's input and output specs before it queues, with Triton's messages: names,
 * datatypes, shapes, batch sizes, required inputs, requested outputs.
 */
export class RequestValidator {
  /** Every output name, in declared order: what a request that names none gets. */
  readonly allOutputNames: readonly string[];
  private readonly inputByName: ReadonlyMap<string, NamedTensorSpec>;
  private readonly outputByName: ReadonlyMap<string, NamedTensorSpec>;

  constructor(
    private readonly name: string,
    private readonly specs: readonly NamedTensorSpec[],
    outputs: readonly NamedTensorSpec[],
    private readonly maxBatchSize: number,
  ) {
    this.inputByName = new Map(specs.map((s) => [s.name, s]));
    this.outputByName = new Map(outputs.map((s) => [s.name, s]));
    this.allOutputNames = outputs.map((s) => s.name);
  }

  inputs(req: InferenceRequest): { inputs: Record<string, Tensor>; rows: number; batchKey: string } {
    const inputs: Record<string, Tensor> = {};
    let rows = -1;
    // Requests batch together only when their inputs and non-batch dims agree: the key says both.
    let key = '';
    let keyParts: string[] | undefined;
    const batched = this.maxBatchSize > 0;
    for (const { name, tensor: t } of req.inputs) {
      const spec = this.inputByName.get(name);
      if (!spec) throw invalidArgument(`${prefixOf(req.id)}unexpected inference input '${name}' for model '${this.name}'`);
      if (name in inputs) throw invalidArgument(`${prefixOf(req.id)}input '${name}' was given more than once for model '${this.name}'`);
      if (t.dtype !== spec.dtype) {
        throw invalidArgument(`${prefixOf(req.id)}inference input '${name}' data-type is '${t.dtype}', but model '${this.name}' expects '${spec.dtype}'`);
      }
      if (batched) {
        const batch = t.shape[0];
        if (batch === undefined) {
          throw invalidArgument(`${prefixOf(req.id)}inference input '${name}' for model '${this.name}' has no batch dimension; expected shape [-1,${spec.shape.join(',')}]`);
        }
        if (rows === -1) rows = batch;
        else if (batch !== rows) {
          throw invalidArgument(`${prefixOf(req.id)}inference input '${name}' batch size ${batch} does not match the batch size ${rows} of the other inputs for model '${this.name}'`);
        }
      }
      if (!shapeMatches(t.shape, batched ? 1 : 0, spec.shape)) {
        const expected = this.maxBatchSize > 0 ? [-1, ...spec.shape] : spec.shape;
        throw invalidArgument(`${prefixOf(req.id)}unexpected shape for input '${name}' for model '${this.name}'. Expected [${expected.join(',')}], got [${t.shape.join(',')}]`);
      }
      inputs[name] = t;
      let part = `${name}:`;
      // A ragged input batches whatever its shape (Triton's allow_ragged_batch): its dims stay out of the key.
      if (!(batched && spec.allowRaggedBatch)) for (let i = batched ? 1 : 0; i < t.shape.length; i++) part += `${t.shape[i]},`;
      if (key === '') key = part;
      else (keyParts ??= [key]).push(part);
    }
    const missing = this.specs.filter((s) => !s.optional && !(s.name in inputs)).map((s) => s.name);
    if (missing.length > 0) {
      const required = this.specs.filter((s) => !s.optional).length;
      const got = Object.keys(inputs);
      throw invalidArgument(
        `${prefixOf(req.id)}expected ${required} inputs but got ${got.length} inputs for model '${this.name}'. ` +
          `Got input(s) [${got.map((n) => `'${n}'`).join(', ')}], but missing required input(s) [${missing.map((n) => `'${n}'`).join(', ')}]. ` +
          'Please provide all required input(s).',
      );
    }
    if (this.maxBatchSize > 0) {
      if (rows < 1 || rows > this.maxBatchSize) {
        throw invalidArgument(`${prefixOf(req.id)}inference request batch-size must be <= ${this.maxBatchSize} for '${this.name}'` + (rows < 1 ? ` and >= 1, got ${rows}` : ''));
      }
    } else {
      rows = 1;
    }
    return { inputs, rows, batchKey: keyParts ? keyParts.sort().join('|') : key };
  }

  requestedOutputs(req: InferenceRequest): readonly string[] {
    if (req.requestedOutputs === undefined || req.requestedOutputs.length === 0) return this.allOutputNames;
    for (const name of req.requestedOutputs) {
      if (!this.outputByName.has(name)) throw invalidArgument(`${prefixOf(req.id)}unexpected inference output '${name}' for model '${this.name}'`);
    }
    return req.requestedOutputs;
  }
}

/** How error messages name a request, as Triton does. */
export function prefixOf(id: string): string {
  return `[request id: ${id || '<id_unknown>'}] `;
}

/** True if `shape` from index `from` on matches `spec` (-1 matches any size). */
export function shapeMatches(shape: readonly number[], from: number, spec: readonly number[]): boolean {
  if (shape.length - from !== spec.length) return false;
  for (let i = 0; i < spec.length; i++) {
    const want = spec[i] as number;
    const got = shape[from + i] as number;
    if (!Number.isInteger(got) || got < 0) return false;
    if (want !== -1 && want !== got) return false;
  }
  return true;
}
