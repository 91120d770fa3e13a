import { isDeepStrictEqual } from 'node:util';
import { TritonError } from '../base/errors';
import { fromConfigType, type DataType } from '../tensor/dtype';

/**
 * Reads the fields of one message of a model config and refuses what tstriton cannot honour: every field is
 * either taken, accepted only at its default value, or, when `done()` runs, named in an error. A field is never
 * silently ignored.
 */
export class ConfigFields {
  private readonly taken = new Set<string>();

  constructor(
    private readonly message: Record<string, unknown>,
    /** `model 'm' (path/config.pbtxt)`, for messages. */
    private readonly where: string,
    /** Path of this message in the config (`dynamic_batching.`), '' at the top. */
    private readonly prefix = '',
  ) {}

  /** The field's value (undefined when absent), marked as handled. */
  take(field: string): unknown {
    this.taken.add(field);
    return this.message[field];
  }

  /** True if the field is present. */
  has(field: string): boolean {
    return this.message[field] !== undefined;
  }

  /** Accepts the field only when absent or at one of `defaults` (what Triton prints for an unset field). */
  takeDefault(field: string, ...defaults: unknown[]): void {
    const value = this.take(field);
    if (value === undefined || defaults.some((d) => isDeepStrictEqual(d, value))) return;
    this.refuse(field, `is set to ${JSON.stringify(value)}, which tstriton does not support`);
  }

  /** A sub-message's reader (undefined when absent); a value that is not a message is refused. */
  sub(field: string): ConfigFields | undefined {
    const value = this.take(field);
    if (value === undefined) return undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) this.refuse(field, 'must be a message');
    return new ConfigFields(value as Record<string, unknown>, this.where, `${this.prefix}${field}.`);
  }

  /** A reader for a message held in a map entry of this one, named `field[key]` in messages. */
  entry(field: string, key: string, value: unknown): ConfigFields {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) this.refuse(`${field}[${key}]`, 'must be a message');
    return new ConfigFields(value as Record<string, unknown>, this.where, `${this.prefix}${field}[${key}].`);
  }

  /** Readers of a repeated message field (none when absent). */
  messages(field: string): ConfigFields[] {
    const value = this.take(field) ?? [];
    if (!Array.isArray(value)) return this.refuse(field, 'must be a list of messages');
    return value.map((v, i) => {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) this.refuse(`${field}[${i}]`, 'must be a message');
      return new ConfigFields(v as Record<string, unknown>, this.where, `${this.prefix}${field}[${i}].`);
    });
  }

  /** A number field, checked to be an integer in [min, max]. */
  integer(field: string, min = -Infinity, max = Infinity): number | undefined {
    const value = this.take(field);
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      this.refuse(field, `must be an integer${min > -Infinity ? ` ≥ ${min}` : ''}, got ${JSON.stringify(value)}`);
    }
    return value as number;
  }

  /** A list of integers. */
  integers(field: string): number[] | undefined {
    const value = this.take(field);
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'number' && Number.isInteger(v))) this.refuse(field, 'must be a list of integers');
    return [...(value as number[])];
  }

  /** A string field. */
  string(field: string): string | undefined {
    const value = this.take(field);
    if (value === undefined) return undefined;
    if (typeof value !== 'string') this.refuse(field, `must be a string, got ${JSON.stringify(value)}`);
    return value as string;
  }

  /** A boolean field. */
  boolean(field: string): boolean | undefined {
    const value = this.take(field);
    if (value === undefined) return undefined;
    if (typeof value !== 'boolean') this.refuse(field, `must be true or false, got ${JSON.stringify(value)}`);
    return value as boolean;
  }

  /** A map field (a plain object). */
  map(field: string): Record<string, unknown> | undefined {
    const value = this.take(field);
    if (value === undefined) return undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) this.refuse(field, 'must be a map');
    return value as Record<string, unknown>;
  }

  /** A data type field (`TYPE_FP32`), required: one tstriton does not serve is refused. */
  dataType(field: string): DataType {
    const raw = this.string(field);
    const dtype = raw === undefined ? undefined : fromConfigType(raw);
    if (!dtype) this.refuse(field, raw === undefined ? 'is required' : `'${raw}' is not a data type tstriton serves`);
    return dtype;
  }

  /** Throws naming the field and what is wrong with it. */
  refuse(field: string, why: string): never {
    throw new TritonError('INVALID_CONFIG', `${this.where}: field '${this.prefix}${field}' ${why}`);
  }

  /** Refuses every field that was not taken. */
  done(): void {
    for (const field of Object.keys(this.message)) {
      if (!this.taken.has(field) && this.message[field] !== undefined) this.refuse(field, 'is not supported by tstriton');
    }
  }
}
