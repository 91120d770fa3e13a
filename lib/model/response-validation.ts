import { RESPONSE_PARAMETERS, type OutputValue, type Request, type Response, type ResponseParameters } from '../callable/callable';
import type { NamedTensorSpec } from '../config/tensor-spec';
import { TritonError } from '../base/errors';
import type { TensorData } from '../tensor/dtype';
import { checkData, elementCount, tensor, type Tensor } from '../tensor/tensor';
import type { NamedTensor, ValidatedOutputs } from './inference';
import { prefixOf, shapeMatches } from './request-validation';

/**
 * Checks what a callable returned against a model's output specs (names, datatypes, element counts, the
 * request's batch size, and with `strict` the declared dims), and orders the outputs as the request asked.
 */
export class ResponseValidator {
  private readonly outputByName: ReadonlyMap<string, NamedTensorSpec>;

  constructor(
    private readonly name: string,
    outputs: readonly NamedTensorSpec[],
    private readonly maxBatchSize: number,
    private readonly strict: boolean,
  ) {
    this.outputByName = new Map(outputs.map((s) => [s.name, s]));
  }

  /** Checks one raw response against the output specs and orders it as the request asked. */
  validate(request: Request, response: Response): ValidatedOutputs {
    const prefix = () => prefixOf(request.id);
    const requested = request.requestedOutputs;
    const rows = this.maxBatchSize > 0 ? firstRows(request.inputs) : 1;
    if (typeof response !== 'object' || response === null) {
      throw failed(`${prefix()}model '${this.name}': the callable returned ${response === null ? 'null' : typeof response} instead of an object of outputs`);
    }
    if (this.strict) {
      for (const name of Object.keys(response)) {
        if (!this.outputByName.has(name)) throw failed(`${prefix()}model '${this.name}': the callable returned output '${name}', which the model does not declare`);
      }
    }
    const outputs: ValidatedOutputs = requested.map((name): NamedTensor => {
      const spec = this.outputByName.get(name) as NamedTensorSpec;
      const value = response[name];
      if (value === undefined) throw failed(`${prefix()}model '${this.name}': output '${name}' is missing from the callable's response`);
      const t = toTensor(value, spec, () => `${prefix()}model '${this.name}', output '${name}'`);
      if (this.maxBatchSize > 0 && t.shape[0] !== rows) {
        throw failed(`${prefix()}model '${this.name}', output '${name}': batch size ${t.shape[0] ?? 'none'} does not match the request's batch size ${rows}`);
      }
      if (this.strict) {
        if (!shapeMatches(t.shape, this.maxBatchSize > 0 ? 1 : 0, spec.shape)) {
          const expected = this.maxBatchSize > 0 ? [-1, ...spec.shape] : spec.shape;
          throw failed(`${prefix()}model '${this.name}', output '${name}': shape [${t.shape.join(',')}] does not match the declared [${expected.join(',')}]`);
        }
      }
      return { name, tensor: t };
    });
    const parameters = response[RESPONSE_PARAMETERS];
    if (parameters !== undefined) outputs.parameters = checkParameters(parameters, () => `${prefix()}model '${this.name}'`);
    return outputs;
  }
}

/** Dim 0 of a request's first input (0 when it has none). */
function firstRows(inputs: Readonly<Record<string, Tensor>>): number {
  for (const name in inputs) return inputs[name]?.shape[0] ?? 0;
  return 0;
}

/** Checks an output value against its spec; `where` names it in errors (built only for one). */
function toTensor(value: OutputValue, spec: NamedTensorSpec, where: () => string): Tensor {
  if (typeof value !== 'object' || value === null || !Array.isArray(value.shape)) {
    throw failed(`${where()}: expected a tensor ({ shape, data }), got ${value === null ? 'null' : typeof value}`);
  }
  const dtype = value.dtype ?? spec.dtype;
  if (dtype !== spec.dtype) throw failed(`${where()}: datatype is ${dtype}, but the model declares ${spec.dtype}`);
  let data = value.data as TensorData | readonly unknown[];
  if (dtype === 'BYTES' && Array.isArray(data) && data.some((e) => typeof e === 'string')) {
    data = (data as readonly (string | Uint8Array)[]).map((e) => (typeof e === 'string' ? Buffer.from(e, 'utf8') : e));
  }
  const problem = checkData(dtype, data);
  if (problem) throw failed(`${where()}: ${problem}`);
  if (elementCount(value.shape) !== (data as TensorData).length) {
    throw failed(`${where()}: shape [${value.shape.join(',')}] needs ${elementCount(value.shape)} elements, data holds ${(data as TensorData).length}`);
  }
  return 'dtype' in value && value.dtype === dtype && data === value.data ? (value as Tensor) : tensor(dtype, value.shape, data as TensorData<typeof dtype>);
}

/** Response parameters must be an object of strings, integers, booleans and doubles, as request parameters. */
function checkParameters(parameters: unknown, where: () => string): ResponseParameters {
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) {
    throw failed(`${where()}: response parameters must be an object, got ${parameters === null ? 'null' : Array.isArray(parameters) ? 'an array' : typeof parameters}`);
  }
  for (const [key, value] of Object.entries(parameters)) {
    const ok = typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint' || (typeof value === 'number' && Number.isFinite(value));
    if (!ok) throw failed(`${where()}: response parameter '${key}' must be a string, integer, boolean or double, got ${value === null ? 'null' : typeof value}`);
  }
  return parameters as ResponseParameters;
}

function failed(message: string): TritonError {
  return new TritonError('INFERENCE_FAILED', message);
}
