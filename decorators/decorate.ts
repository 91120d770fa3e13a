import { CALLABLE_MARK, type MarkedCallable, type Request, type Response } from '../lib';

/** Runs a user function under the raw contract; `self` is the object the method belongs to. */
export type Adapter<F> = (fn: F, self: unknown, requests: Request[]) => Promise<Response[]>;

/** Any function, as TC39 method decorators see it. */
type AnyMethod = (this: unknown, ...args: never[]) => unknown;

/**
 * The three ways every decorator can be used, from one adapter:
 * a plain wrapper `batch(fn)`, a legacy (`experimentalDecorators`) method decorator, and a TC39 method
 * decorator. The result is always a raw callable marked with the decorator's name.
 */
export interface Decorator<F> {
  /** Plain wrapper: `batch(async (inputs) => ...)`. */
  (fn: F): MarkedCallable;
  /** Legacy method decorator (`experimentalDecorators: true`). */
  (target: object, key: string | symbol, descriptor: PropertyDescriptor): PropertyDescriptor;
  /** TC39 method decorator (TypeScript 5 default). */
  <M extends AnyMethod>(method: M, context: ClassMethodDecoratorContext): M;
}

/** Builds a decorator named `name` from an adapter. */
export function makeDecorator<F extends (...args: never[]) => unknown>(name: string, adapt: Adapter<F>): Decorator<F> {
  const wrap = (fn: F): MarkedCallable => {
    // `this` at call time is the object the raw callable was bound to (see resolveCallable).
    const marked = function (this: unknown, requests: Request[]) {
      return adapt(fn, this, requests);
    } as MarkedCallable;
    marked[CALLABLE_MARK] = name;
    Object.defineProperty(marked, 'name', { value: `${name}(${fn.name || 'anonymous'})` });
    return marked;
  };
  function decorator(...args: unknown[]): unknown {
    const [first, second, third] = args;
    if (typeof first !== 'function') {
      if (args.length === 3 && isDescriptor(third) && typeof third.value === 'function') {
        return { ...third, value: wrap(third.value as F) };
      }
      throw new TypeError(`@${name} must decorate a method or wrap a function`);
    }
    if (args.length >= 2 && isMethodContext(second) && second.kind !== 'method') {
      throw new TypeError(`@${name} can only decorate methods, not a ${second.kind}`);
    }
    return wrap(first as F);
  }
  return decorator as Decorator<F>;
}

function isDescriptor(v: unknown): v is PropertyDescriptor {
  return typeof v === 'object' && v !== null && ('value' in v || 'get' in v);
}

function isMethodContext(v: unknown): v is { kind: string } {
  return typeof v === 'object' && v !== null && 'kind' in v;
}
