import 'reflect-metadata';
import { validateSync, type ValidationError } from './class-validator';
import { TritonError } from '../base/errors';

/**
 * Validates a config object (and its nested configs) and throws one INVALID_CONFIG error that lists every
 * problem, each prefixed with the field's path: `invalid ModelConfig: batcher.maxQueueDelayMicroseconds: ...`.
 */
export function validateOrThrow(value: object, label: string): void {
  const errors = validateSync(value, { forbidUnknownValues: false });
  if (errors.length === 0) return;
  const lines: string[] = [];
  collect(errors, '', lines);
  throw new TritonError('INVALID_CONFIG', `invalid ${label}: ${lines.join('; ')}`);
}

function collect(errors: ValidationError[], path: string, out: string[]): void {
  for (const e of errors) {
    const here = path ? `${path}.${e.property}` : e.property;
    for (const message of Object.values(e.constraints ?? {})) out.push(`${here}: ${message}`);
    if (e.children && e.children.length > 0) collect(e.children, here, out);
  }
}

/** Copies only the known keys of `init`, rejecting unknown ones so that typos do not pass silently. */
export function assignKnown<T extends object>(target: T, init: object | undefined, keys: readonly (keyof T & string)[], label: string): void {
  if (init === undefined || init === null) return;
  if (typeof init !== 'object') {
    throw new TritonError('INVALID_CONFIG', `invalid ${label}: expected an object, got ${typeof init}`);
  }
  for (const key of Object.keys(init)) {
    if (!(keys as readonly string[]).includes(key)) {
      throw new TritonError('INVALID_CONFIG', `invalid ${label}: unknown field "${key}"; known fields are ${keys.join(', ')}`);
    }
    const v = (init as Record<string, unknown>)[key];
    if (v !== undefined) (target as Record<string, unknown>)[key] = v;
  }
}
