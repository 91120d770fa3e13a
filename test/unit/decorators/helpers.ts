import * as ts from 'typescript';
import * as lib from '../../../lib';
import { tensor, type InferCallable, type InstanceContext, type OutputValue, type ParameterValue, type Request, type Tensor } from '../../../lib';
import * as decorators from '../../../decorators';
import { resolveCallable } from '../../../lib/callable/infer-func';

/** A request as the server builds one. */
export function request(
  inputs: Record<string, Tensor>,
  options: { id?: string; parameters?: Record<string, ParameterValue>; signal?: AbortSignal } = {},
): Request {
  return {
    inputs,
    parameters: options.parameters ?? {},
    requestedOutputs: [],
    id: options.id ?? '',
    signal: options.signal ?? new AbortController().signal,
  };
}

/** An FP32 tensor. */
export const f32 = (shape: number[], ...v: number[]): Tensor => tensor('FP32', shape, new Float32Array(v));

/** One FP32 row `[1, v.length]`. */
export const row = (...v: number[]): Tensor => f32([1, v.length], ...v);

/** The elements of an output as plain numbers (or strings for BYTES). */
export function values(o: OutputValue | undefined): unknown[] {
  if (!o) throw new Error('no such output');
  return Array.from(o.data as ArrayLike<unknown>, (e) => (e instanceof Uint8Array ? Buffer.from(e).toString('utf8') : typeof e === 'bigint' ? Number(e) : e));
}

/** The instance context the server passes as the raw callable's second argument. */
export const INSTANCE: InstanceContext = {
  modelName: 'm',
  modelVersion: '3',
  instanceName: 'm_1',
  device: { kind: 'cpu', id: 0 },
  modelConfig: {
    name: 'm',
    max_batch_size: 8,
    input: [
      { name: 'x', data_type: 'TYPE_FP32', dims: [-1] },
      { name: 'temperature', data_type: 'TYPE_FP32', dims: [1] },
      { name: 'mode', data_type: 'TYPE_STRING', dims: [1] },
      { name: 'steps', data_type: 'TYPE_INT64', dims: [1] },
    ],
    output: [{ name: 'y', data_type: 'TYPE_FP32', dims: [-1] }],
    dynamic_batching: { preferred_batch_size: [4, 6] },
  },
};

/** A deferred promise, to hold a call open while a test looks at it. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Compiles `source` (a module that exports class `M`) under TC39 decorators or `experimentalDecorators`,
 * evaluates it with `tstriton` and `tstriton/decorators`, and returns the raw callable `bind()` would use
 * for a new `M`.
 */
export function compileModel(source: string, experimentalDecorators: boolean): InferCallable {
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, experimentalDecorators },
  });
  const mod = { exports: {} as Record<string, new () => object> };
  const requireShim = (name: string): unknown => {
    if (name === 'tstriton/decorators') return decorators;
    if (name === 'tstriton') return lib;
    throw new Error(`unexpected import ${name}`);
  };
  new Function('require', 'module', 'exports', outputText)(requireShim, mod, mod.exports);
  return resolveCallable(new mod.exports.M!(), 'm');
}

/** Both decorator modes, for `it.each`. */
export const MODES = [
  ['TC39', false],
  ['legacy (experimentalDecorators)', true],
] as const;

/** Calls a raw callable as the server does: the requests, and the instance context when given. */
export function call(fn: InferCallable, requests: Request[], instance?: InstanceContext): Promise<lib.Response[]> {
  return Promise.resolve((fn as decorators.RequestsFn)(requests, instance));
}

/** The error `fn` throws (synchronously) or its promise rejects with; fails the test if there is none. */
export async function caught(fn: () => unknown): Promise<lib.TritonError> {
  try {
    await fn();
  } catch (err) {
    expect(err).toBeInstanceOf(lib.TritonError);
    return err as lib.TritonError;
  }
  throw new Error('expected an error, got none');
}
