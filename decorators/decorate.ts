import { CALLABLE_MARK, type MarkedCallable } from '../lib/callable/callable-marks';
import { TritonError, type InstanceContext, type Request, type Response, type Tensor } from '../lib';
import { isBatchContext, type BatchContext, type BatchFn, type BatchOutputs } from './context';

/**
 * Runs a user function under the raw contract; `self` is the object the method belongs to, `instance` the
 * instance context the server passes as the raw callable's second argument (undefined when it passes none).
 */
export type Adapter<F> = (fn: F, self: unknown, requests: Request[], instance?: InstanceContext) => Promise<Response[]>;

/** Runs a batch function under a batch-level decorator: same signature in, same signature out. */
export type BatchTransform = (fn: BatchFn, self: unknown, inputs: Record<string, Tensor>, context: BatchContext) => Promise<BatchOutputs>;

/** A raw callable as the decorators call one another: the requests, and the instance context when known. */
export type RequestsFn = (requests: Request[], instance?: InstanceContext) => Promise<Response[]> | Response[];

/**
 * A method of `This`, as TC39 method decorators see it: the bound that TypeScript's own
 * `ClassMethodDecoratorContext<This, Value>` puts on `Value`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type MethodOf<This> = (this: This, ...args: any) => any;

/**
 * The three ways every decorator can be used, from one wrapping function:
 * a TC39 (standard) method decorator, a legacy (`experimentalDecorators`) method decorator, and a plain wrapper
 * `batch(fn)`. `R` is what the wrapper form returns: a raw callable for request-level decorators, a batch
 * function for batch-level ones.
 *
 * The signatures are ordered for the type checker. TypeScript resolves a standard decorator `@batch` as a call
 * that may pass the method alone to a signature of one parameter, and it tries every signature for an exact
 * (subtype) match before an assignable one: were the plain wrapper first, or the standard form's context any
 * wider than the method's own, it would pick the wrapper and report that its return type `R` is not the method's
 * type (TS1270). So the standard form comes first and takes the method's exact context; a plain call `batch(fn)`
 * has one argument and skips it; a legacy decorator's (prototype, name, descriptor) fits only the second.
 */
export interface Decorator<F, R = MarkedCallable> {
  /**
   * TC39 method decorator (TypeScript 5 and later without `experimentalDecorators`). Its type is the method's
   * own: at run time the method becomes the decorated callable, which the server calls with the requests.
   */
  <This, M extends MethodOf<This>>(method: M, context: ClassMethodDecoratorContext<This, M>): M;
  /** Legacy method decorator (`experimentalDecorators: true`). */
  (target: object, key: string | symbol, descriptor: PropertyDescriptor): PropertyDescriptor;
  /** Plain wrapper: `batch(async (inputs) => ...)`. */
  (fn: F): R;
}

/** A batch-level decorator: turns a batch function into another batch function; goes below `@batch`. */
export type BatchDecorator = Decorator<BatchFn, BatchFn>;

/** Marks a batch function made by a batch-level decorator; the value is the decorator's name. */
export const BATCH_MARK: unique symbol = Symbol.for('tstriton.batchFn');

/** The function a decorator wrapped, kept on the wrapper so that `@tritonContext` can be seen through. */
export const WRAPPED_FN: unique symbol = Symbol.for('tstriton.wrappedFn');

/** A function a decorator made, with its marks. */
type Wrapper = ((...args: never[]) => unknown) & {
  [CALLABLE_MARK]?: string;
  [BATCH_MARK]?: string;
  [WRAPPED_FN]?: unknown;
};

/**
 * What a decorator accepts as the function it wraps:
 * - `batch-fn`: a batch function (user code or a batch-level decorator), as `@batch` and the batch-level
 *   decorators take;
 * - `sample-fn`: a per-request function, as `@sample` takes;
 * - `requests`: a raw callable (user code or a request-level decorator);
 * - `context-fn`: a function taking the requests and a context, as `@tritonContext` takes;
 * - `any`: no check (the default of the public `makeDecorator`).
 */
export type Accepts = 'batch-fn' | 'sample-fn' | 'requests' | 'context-fn' | 'any';

/** Builds a request-level decorator named `name` from an adapter; the result is always a marked raw callable. */
export function makeDecorator<F extends (...args: never[]) => unknown>(name: string, adapt: Adapter<F>, accepts: Accepts = 'any'): Decorator<F> {
  return forms<F, MarkedCallable>(name, (fn) => {
    const inner = innerFunction(name, fn, accepts);
    // `this` at call time is the object the raw callable was bound to (see resolveCallable).
    const marked = function (this: unknown, requests: Request[], instance?: InstanceContext) {
      return adapt(inner, this, requests, instance);
    } as MarkedCallable & Wrapper;
    marked[CALLABLE_MARK] = name;
    marked[WRAPPED_FN] = inner;
    Object.defineProperty(marked, 'name', { value: `${name}(${fn.name || 'anonymous'})` });
    return marked;
  });
}

/**
 * Builds a batch-level decorator named `name`: the result is a batch function, to be wrapped by `@batch`
 * (directly or through other batch-level decorators). Called any other way, it fails with a message that
 * says where it belongs.
 */
export function makeBatchDecorator(name: string, transform: BatchTransform): BatchDecorator {
  return forms<BatchFn, BatchFn>(name, (fn) => {
    const inner = innerFunction(name, fn, 'batch-fn');
    const wrapped = async function (this: unknown, inputs: Record<string, Tensor>, context: BatchContext) {
      if (!isBatchContext(context)) {
        const got = Array.isArray(inputs) ? 'a list of requests' : 'no batch context';
        throw new TritonError('INFERENCE_FAILED', `@${name} works on batches and must be placed below @batch; it was called with ${got} (is @batch missing above it?)`);
      }
      return transform(inner, this, inputs, context);
    } as BatchFn & Wrapper;
    wrapped[BATCH_MARK] = name;
    wrapped[WRAPPED_FN] = inner;
    Object.defineProperty(wrapped, 'name', { value: `${name}(${fn.name || 'anonymous'})` });
    return wrapped;
  });
}

/** The batch-level decorator that made `fn`, if any. */
export function batchMarkOf(fn: unknown): string | undefined {
  return typeof fn === 'function' ? (fn as Wrapper)[BATCH_MARK] : undefined;
}

/**
 * Checks that `fn` is something `name` may wrap, and sees through `@tritonContext`: below `@batch` and
 * `@sample` the context is always passed, so `@tritonContext` there is the function it wraps.
 */
function innerFunction<F>(name: string, fn: F, accepts: Accepts): F {
  if (accepts === 'any' || typeof fn !== 'function') return fn;
  let f = fn as unknown as Wrapper;
  if ((accepts === 'batch-fn' || accepts === 'sample-fn') && f[CALLABLE_MARK] === 'tritonContext') f = f[WRAPPED_FN] as Wrapper;
  const raw = f[CALLABLE_MARK];
  const batchLevel = f[BATCH_MARK];
  if (accepts === 'requests') {
    if (batchLevel !== undefined) {
      throw misuse(`@${name} works on the list of requests and goes above @batch, but it wraps @${batchLevel}, which works on batches`);
    }
    return f as unknown as F;
  }
  if (raw !== undefined) throw misuse(`@${name} cannot wrap @${raw}, which already takes the list of requests; put @${raw} above @${name}`);
  if (accepts === 'sample-fn' && batchLevel !== undefined) {
    throw misuse(`@sample cannot wrap @${batchLevel}, which works on batches: use @batch above it`);
  }
  return f as unknown as F;
}

/** A decorator used where it cannot work: found when the decorator is applied, never on the wire. */
export function misuse(message: string): TritonError {
  return new TritonError('INVALID_CONFIG', message);
}

/** The three forms around one wrapping function. */
function forms<F, R>(name: string, wrap: (fn: F) => R): Decorator<F, R> {
  function decorator(...args: unknown[]): unknown {
    const [first, second, third] = args;
    if (typeof first !== 'function') {
      if (args.length === 3 && isDescriptor(third) && typeof third.value === 'function') {
        return { ...third, value: wrap(third.value as F) };
      }
      throw misuse(`@${name} must decorate a method or wrap a function`);
    }
    if (args.length >= 2 && isMethodContext(second) && second.kind !== 'method') {
      throw misuse(`@${name} can only decorate methods, not a ${second.kind}`);
    }
    return wrap(first as F);
  }
  return decorator as Decorator<F, R>;
}

/** True if `args` are a decorator's arguments (a function, a TC39 method, or a legacy method) rather than options. */
export function isDecoratorCall(args: readonly unknown[]): boolean {
  return typeof args[0] === 'function' || (args.length === 3 && isDescriptor(args[2]));
}

function isDescriptor(v: unknown): v is PropertyDescriptor {
  return typeof v === 'object' && v !== null && ('value' in v || 'get' in v);
}

function isMethodContext(v: unknown): v is { kind: string } {
  return typeof v === 'object' && v !== null && 'kind' in v;
}

/**
 * Splits a decorator factory's arguments `('a', 'b', { ...options })` into names and options; rejects the
 * factory used bare (`@groupByValues` without arguments) and anything but non-empty strings as names.
 */
export function namesAndOptions<O extends object>(name: string, args: readonly unknown[]): { names: string[]; options: Partial<O> } {
  if (isDecoratorCall(args)) throw misuse(`@${name} needs arguments: write @${name}('input'), not @${name}`);
  const last = args[args.length - 1];
  const hasOptions = typeof last === 'object' && last !== null && !Array.isArray(last);
  const names = hasOptions ? args.slice(0, -1) : [...args];
  for (const n of names) {
    if (typeof n !== 'string' || n === '') {
      throw misuse(`@${name} takes input names (non-empty strings) and an options object last; got ${JSON.stringify(n) ?? String(n)}`);
    }
  }
  return { names: names as string[], options: (hasOptions ? last : {}) as Partial<O> };
}
