import type { InferCallable } from './callable';
import { isMarkedCallable } from './callable-marks';
import { TritonError } from '../base/errors';
import type { InstanceContext, InstanceReport } from './instance-context';

/**
 * What `bind()` accepts as `inferFunc`: a raw callable, an object with a decorated method, a class, a factory
 * made with `instanceFactory`, a `workers(...)` spec, or a list of them (one instance each; a worker spec
 * contributes one instance per device).
 */
export type InferFunc = InferCallable | object | readonly (InferCallable | object)[];

/** Lifecycle hooks an inference object may define, as Triton's Python backend `initialize(args)`/`finalize()`. */
export interface LifecycleHooks {
  /** Called once when the instance starts, before its first batch; awaited. */
  initialize?(context: InstanceContext): unknown;
  /** Called once when the instance closes, after its last batch; awaited. */
  finalize?(): unknown;
  /** Called once after `initialize`: what the instance says of itself (structured-cloneable), see `InstanceReport`. */
  report?(): InstanceReport;
}

/** What an instance factory (or a class) may produce: a raw callable or an object with a decorated method. */
export type InstanceTarget = InferCallable | object;

/** Marks a function made by `instanceFactory`. */
export const FACTORY_MARK: unique symbol = Symbol.for('tstriton.instanceFactory');

/** A function that builds an instance's callable from its context, marked by `instanceFactory`. */
export type InstanceFactory = ((context: InstanceContext) => InstanceTarget | Promise<InstanceTarget>) & { readonly [FACTORY_MARK]: true };

/**
 * Declares `fn` as an instance factory: it is called once per instance, with the instance's context (model
 * config, instance name, device), and returns the callable or object that instance runs. Without the mark a
 * plain function is taken as a raw callable.
 */
export function instanceFactory(fn: (context: InstanceContext) => InstanceTarget | Promise<InstanceTarget>): InstanceFactory {
  if (typeof fn !== 'function') throw new TritonError('INVALID_CONFIG', `instanceFactory expects a function, got ${describe(fn)}`);
  Object.defineProperty(fn, FACTORY_MARK, { value: true });
  return fn as InstanceFactory;
}

/** True if `value` was made by `instanceFactory`. */
export function isInstanceFactory(value: unknown): value is InstanceFactory {
  return typeof value === 'function' && (value as Partial<InstanceFactory>)[FACTORY_MARK] === true;
}

/** True if `value` is a class (ES `class` syntax), which is constructed with the instance's context. */
export function isClass(value: unknown): value is new (context: InstanceContext) => object {
  return typeof value === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(value));
}

/** True if `entry` can only be turned into a callable once its instance starts (a class or a factory). */
export function needsContext(entry: unknown): boolean {
  return isClass(entry) || isInstanceFactory(entry);
}

/** A callable ready to run, with the lifecycle hooks of the object it came from (bound to it). */
export interface LoadedCallable {
  readonly callable: InferCallable;
  readonly initialize?: (context: InstanceContext) => unknown;
  readonly finalize?: () => unknown;
  readonly report?: () => InstanceReport;
}

/**
 * Turns one `inferFunc` entry into a raw callable: a function is used as it is; an object contributes the one
 * method that carries `@batch`/`@sample` (or, failing that, its `infer` method), bound to the object.
 */
export function resolveCallable(entry: unknown, modelName: string): InferCallable {
  if (typeof entry === 'function') return entry as InferCallable;
  if (typeof entry !== 'object' || entry === null) {
    throw new TritonError('INVALID_CONFIG', `model '${modelName}': inferFunc must be a function or an object with a decorated method, got ${describe(entry)}`);
  }
  const marked = new Set<string>();
  for (let proto: object | null = entry; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const key of Object.getOwnPropertyNames(proto)) {
      if (key === 'constructor') continue;
      const desc = Object.getOwnPropertyDescriptor(proto, key);
      if (desc && 'value' in desc && isMarkedCallable(desc.value)) marked.add(key);
    }
  }
  if (marked.size > 1) {
    throw new TritonError('INVALID_CONFIG', `model '${modelName}': inferFunc object has several decorated methods (${[...marked].join(', ')}); decorate exactly one`);
  }
  const key = [...marked][0] ?? 'infer';
  const method = (entry as Record<string, unknown>)[key];
  if (typeof method !== 'function') {
    throw new TritonError('INVALID_CONFIG', `model '${modelName}': inferFunc object has no method decorated with @batch or @sample and no 'infer' method`);
  }
  return (method as InferCallable).bind(entry);
}

/**
 * Resolves an entry that needs no context (a function or an object) into its callable and the object's
 * `initialize`/`finalize` hooks. Classes and factories are rejected: use `buildCallable` for them.
 */
export function loadCallable(entry: unknown, modelName: string): LoadedCallable {
  if (needsContext(entry)) {
    throw new TritonError('INTERNAL', `model '${modelName}': a class or factory needs the instance context; build it when the instance starts`);
  }
  const callable = resolveCallable(entry, modelName);
  if (typeof entry !== 'object' || entry === null) return { callable };
  const hooks = entry as LifecycleHooks;
  return {
    callable,
    initialize: typeof hooks.initialize === 'function' ? hooks.initialize.bind(entry) : undefined,
    finalize: typeof hooks.finalize === 'function' ? hooks.finalize.bind(entry) : undefined,
    report: typeof hooks.report === 'function' ? hooks.report.bind(entry) : undefined,
  };
}

/**
 * Builds an instance's callable from an entry, in this order:
 * 1. a function carrying a decorator's mark (`@batch`, `@sample`, ...) is the raw callable;
 * 2. a class is constructed with `new Class(context)` and the object is resolved by rule 5;
 * 3. a function marked by `instanceFactory` is called with the context and awaited; its result (a callable or
 *    an object, not another class or factory) is resolved by rules 1, 4 and 5;
 * 4. any other function is the raw callable;
 * 5. an object contributes its decorated method (or `infer`) and its `initialize`/`finalize` hooks.
 */
export async function buildCallable(entry: unknown, context: InstanceContext): Promise<LoadedCallable> {
  const where = `model '${context.modelName}', instance ${context.instanceName}`;
  if (isClass(entry)) return loadCallable(new entry(context), context.modelName);
  if (isInstanceFactory(entry)) {
    const made: unknown = await entry(context);
    if (needsContext(made)) {
      throw new TritonError('INVALID_CONFIG', `${where}: the instance factory returned a ${isClass(made) ? 'class' : 'factory'}; return a callable or an object`);
    }
    if (typeof made !== 'function' && (typeof made !== 'object' || made === null)) {
      throw new TritonError('INVALID_CONFIG', `${where}: the instance factory must return a callable or an object with a decorated method, got ${describe(made)}`);
    }
    return loadCallable(made, context.modelName);
  }
  return loadCallable(entry, context.modelName);
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}
