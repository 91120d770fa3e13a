import { isMarkedCallable, type InferCallable } from './callable';
import { TritonError } from './errors';

/** What `bind()` accepts as `inferFunc`: a raw callable, an object with a decorated method, or a list (one instance each). */
export type InferFunc = InferCallable | object | readonly (InferCallable | object)[];

/**
 * Turns one `inferFunc` entry into a raw callable: a function is used as it is; an object contributes the one
 * method that carries `@batch`/`@sample` (or, failing that, its `infer` method), bound to the object.
 */
export function resolveCallable(entry: unknown, modelName: string): InferCallable {
  if (typeof entry === 'function') return entry as InferCallable;
  if (typeof entry !== 'object' || entry === null) {
    throw new TritonError('INVALID_CONFIG', `model '${modelName}': inferFunc must be a function or an object with a decorated method, got ${entry === null ? 'null' : typeof entry}`);
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

/** Normalises `inferFunc` into one raw callable per instance. */
export function resolveCallables(inferFunc: InferFunc, modelName: string): InferCallable[] {
  const entries = Array.isArray(inferFunc) ? inferFunc : [inferFunc];
  if (entries.length === 0) throw new TritonError('INVALID_CONFIG', `model '${modelName}': inferFunc list is empty`);
  return entries.map((e) => resolveCallable(e, modelName));
}
