import { TritonError, tensor, type DataType, type InstanceContext, type ModelConfigJson, type Request, type Tensor } from '../lib';
import { DTYPES, checkData, elementCount, fromConfigType } from '../lib/tensor';
import { requestRows } from './batch-inputs';
import { describeRequest } from './context';
import { makeDecorator, type Decorator, type RequestsFn } from './decorate';
import { tileRows } from './tensor-rows';

/** A plain default element. */
export type DefaultScalar = number | bigint | boolean | string;

/**
 * A default for one input, without the batch dim: a tensor, or plain values whose datatype and shape come
 * from the model config (a scalar fills every element of a shape of size 1; a list fills the declared dims).
 */
export type DefaultValue = Tensor | DefaultScalar | readonly DefaultScalar[];

interface InputSpec {
  readonly dtype: DataType;
  readonly dims: readonly number[];
}

interface Resolved {
  /** The default of each input, without batch dim. */
  readonly values: ReadonlyMap<string, Tensor>;
  /** True if the model batches: defaults are then tiled to each request's rows. */
  readonly batching: boolean;
  /** True if the defaults were checked against the model config (else against the other requests). */
  readonly checked: boolean;
}

/**
 * Fills the inputs a request left out with defaults, per request: with a batching model a default gets the
 * request's batch size as dim 0. The requests themselves are not changed; the wrapped callable gets copies.
 * Defaults are checked against the model config (name, datatype, dims with -1 matching any size) when the
 * server passes the instance context, otherwise against the requests that did send the input.
 * Goes above `@groupByKeys`/`@batch`, so that filled requests batch together.
 */
export function fillOptionals(defaults: Readonly<Record<string, DefaultValue>>): Decorator<RequestsFn> {
  checkDefaults(defaults);
  const names = Object.keys(defaults);
  const cache = new WeakMap<ModelConfigJson, Resolved>();
  return makeDecorator<RequestsFn>(
    'fillOptionals',
    async (fn, self, requests, instance) => {
      const config = instance?.modelConfig;
      let resolved = config ? cache.get(config) : undefined;
      if (!resolved) {
        resolved = resolveDefaults(defaults, instance);
        if (config) cache.set(config, resolved);
      }
      const { values, batching, checked } = resolved;
      const filled = requests.map((r): Request => {
        const missing = names.filter((n) => !(n in r.inputs));
        if (missing.length === 0) return r;
        const inputs: Record<string, Tensor> = { ...r.inputs };
        for (const name of missing) {
          const value = values.get(name) as Tensor;
          if (!checked) checkAgainstRequests(name, value, batching, requests);
          inputs[name] = batching ? tileRows(value, requestRows(r)) : value;
        }
        return { ...r, inputs };
      });
      return fn.call(self, filled, instance);
    },
    'requests',
  );
}

/** Rejects defaults that cannot be right whatever the model: bad tensors, empty lists, unsupported values. */
function checkDefaults(defaults: Readonly<Record<string, DefaultValue>>): void {
  if (typeof defaults !== 'object' || defaults === null) {
    throw new TritonError('INVALID_CONFIG', '@fillOptionals expects an object of defaults by input name, e.g. fillOptionals({ temperature: 0.7 })');
  }
  for (const [name, value] of Object.entries(defaults)) {
    if (isTensor(value)) {
      const problem = checkData(value.dtype, value.data);
      if (problem) throw new TritonError('INVALID_CONFIG', `@fillOptionals: default for input "${name}": ${problem}`);
      if (elementCount(value.shape) !== value.data.length) {
        throw new TritonError('INVALID_CONFIG', `@fillOptionals: default for input "${name}" has shape [${value.shape.join(',')}] but ${value.data.length} elements`);
      }
      continue;
    }
    const items = Array.isArray(value) ? (value as readonly unknown[]) : [value];
    if (items.length === 0) throw new TritonError('INVALID_CONFIG', `@fillOptionals: default for input "${name}" is an empty list`);
    const bad = items.find((v) => !['number', 'bigint', 'boolean', 'string'].includes(typeof v));
    if (bad !== undefined || items.includes(undefined)) {
      throw new TritonError('INVALID_CONFIG', `@fillOptionals: default for input "${name}" must be a tensor, a number, bigint, boolean or string, or a list of them`);
    }
  }
}

function resolveDefaults(defaults: Readonly<Record<string, DefaultValue>>, instance: InstanceContext | undefined): Resolved {
  const config = instance?.modelConfig;
  const values = new Map<string, Tensor>();
  if (!config) {
    for (const [name, value] of Object.entries(defaults)) {
      if (!isTensor(value)) {
        throw new TritonError(
          'INFERENCE_FAILED',
          `@fillOptionals: the default of input "${name}" is a plain value, but no model config gives its datatype ` +
            `(the callable was called without an instance context); give a tensor, e.g. tensor('FP32', [1], [0.5])`,
        );
      }
      values.set(name, value);
    }
    return { values, batching: true, checked: false };
  }
  const specs = inputSpecs(config);
  const model = `model '${instance?.modelName ?? String(config.name)}'`;
  for (const [name, value] of Object.entries(defaults)) {
    const spec = specs.get(name);
    if (!spec) {
      throw new TritonError('INFERENCE_FAILED', `@fillOptionals: input "${name}" has a default, but ${model} declares no such input (inputs: ${[...specs.keys()].join(', ')})`);
    }
    values.set(name, isTensor(value) ? checkTensor(name, value, spec, model) : valueTensor(name, value, spec, model));
  }
  return { values, batching: Number(config.max_batch_size) > 0, checked: true };
}

function inputSpecs(config: ModelConfigJson): Map<string, InputSpec> {
  const out = new Map<string, InputSpec>();
  const inputs = Array.isArray(config.input) ? (config.input as { name?: unknown; data_type?: unknown; dims?: unknown }[]) : [];
  for (const i of inputs) {
    const dtype = typeof i.data_type === 'string' ? fromConfigType(i.data_type) : undefined;
    if (typeof i.name === 'string' && dtype) out.set(i.name, { dtype, dims: Array.isArray(i.dims) ? i.dims.map(Number) : [] });
  }
  return out;
}

function checkTensor(name: string, value: Tensor, spec: InputSpec, model: string): Tensor {
  if (value.dtype !== spec.dtype) {
    throw new TritonError('INFERENCE_FAILED', `@fillOptionals: default for input "${name}" is ${value.dtype}, but ${model} declares ${spec.dtype}`);
  }
  const fits = value.shape.length === spec.dims.length && spec.dims.every((d, i) => d === -1 || d === value.shape[i]);
  if (!fits) {
    throw new TritonError(
      'INFERENCE_FAILED',
      `@fillOptionals: default for input "${name}" has shape [${value.shape.join(',')}], but ${model} declares [${spec.dims.join(',')}] ` +
        '(without the batch dim; -1 matches any size)',
    );
  }
  return value;
}

/** Builds the default tensor of plain values from the input's spec. */
function valueTensor(name: string, value: DefaultScalar | readonly DefaultScalar[], spec: InputSpec, model: string): Tensor {
  const items: readonly DefaultScalar[] = Array.isArray(value) ? value : [value as DefaultScalar];
  const what = `@fillOptionals: default for input "${name}" (${model} declares ${spec.dtype} [${spec.dims.join(',')}])`;
  const known = spec.dims.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
  const free = spec.dims.filter((d) => d === -1).length;
  let shape: number[];
  if (free === 0 || items.length === known) shape = spec.dims.map((d) => (d === -1 ? 1 : d));
  else if (free === 1 && items.length % known === 0) shape = spec.dims.map((d) => (d === -1 ? items.length / known : d));
  else shape = [];
  if (elementCount(shape) !== items.length || shape.length !== spec.dims.length) {
    throw new TritonError('INFERENCE_FAILED', `${what}: ${items.length} value(s) do not fill that shape; give a tensor`);
  }
  return tensor(spec.dtype, shape, elements(spec.dtype, items, what) as never);
}

function elements(dtype: DataType, items: readonly DefaultScalar[], what: string): unknown {
  const fail = (v: DefaultScalar): never => {
    throw new TritonError('INFERENCE_FAILED', `${what}: value ${typeof v === 'bigint' ? `${v}n` : JSON.stringify(v)} is not a ${dtype} value`);
  };
  if (dtype === 'BYTES') return items.map((v) => (typeof v === 'string' ? v : fail(v)));
  const Ctor = DTYPES[dtype].array as unknown as new (n: number) => { [i: number]: number | bigint };
  const out = new Ctor(items.length);
  const big = dtype === 'INT64' || dtype === 'UINT64';
  items.forEach((v, i) => {
    if (dtype === 'BOOL') out[i] = typeof v === 'boolean' ? (v ? 1 : 0) : fail(v);
    else if (big) out[i] = typeof v === 'bigint' ? v : typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : fail(v);
    else out[i] = typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : fail(v);
  });
  return out;
}

/** Without a model config: the default must agree with the requests that did send the input. */
function checkAgainstRequests(name: string, value: Tensor, batching: boolean, requests: readonly Request[]): void {
  requests.forEach((r, j) => {
    const sent = r.inputs[name];
    if (!sent) return;
    const rank = batching ? sent.shape.length - 1 : sent.shape.length;
    if (sent.dtype !== value.dtype || rank !== value.shape.length) {
      throw new TritonError(
        'INFERENCE_FAILED',
        `@fillOptionals: default for input "${name}" is ${value.dtype} [${value.shape.join(',')}], but ${describeRequest(requests, j)} ` +
          `sent ${sent.dtype} [${sent.shape.join(',')}]${batching ? ' (with the batch dim)' : ''}`,
      );
    }
  });
}

function isTensor(v: unknown): v is Tensor {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && 'dtype' in v && 'shape' in v && 'data' in v;
}
