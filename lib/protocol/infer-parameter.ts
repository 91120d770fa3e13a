import { TritonError } from '../base/errors';
import type { InferParameterMap, InferParameterMessage, Int64 } from './messages';

/** A request parameter value (string, integer, boolean or double; 64-bit integers as BigInt). */
export type ParameterValue = string | number | boolean | bigint;

/**
 * Turns a gRPC `map<string, InferParameter>` into plain values: strings, booleans, doubles, and 64-bit
 * integers as numbers when they fit in 2^53, as BigInt otherwise. `parseParameters` takes it from there.
 */
export function fromInferParameters(map: InferParameterMap | undefined, where: string): Record<string, ParameterValue> {
  const out: Record<string, ParameterValue> = {};
  if (!map) return out;
  for (const key of Object.keys(map)) {
    const value = parameterValue(map[key] as InferParameterMessage);
    if (value === undefined) throw new TritonError('INVALID_ARGUMENT', `${where} parameter '${key}' has no value set`);
    out[key] = value;
  }
  return out;
}

function parameterValue(p: InferParameterMessage): ParameterValue | undefined {
  switch (p.parameter_choice ?? firstSet(p)) {
    case 'bool_param':
      return p.bool_param;
    case 'int64_param':
      return int64Value(p.int64_param as Int64);
    case 'string_param':
      return p.string_param;
    case 'double_param':
      return p.double_param;
    case 'uint64_param':
      return int64Value(p.uint64_param as Int64);
    default:
      return undefined;
  }
}

const CHOICES = ['bool_param', 'int64_param', 'string_param', 'double_param', 'uint64_param'] as const;

function firstSet(p: InferParameterMessage): string | undefined {
  return CHOICES.find((c) => p[c] !== undefined && p[c] !== null);
}

/** A 64-bit integer field as a number when exact, else as a BigInt. */
export function int64Value(v: Int64): number | bigint {
  if (typeof v === 'number') return v;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : BigInt(v);
}

/**
 * Plain values to a gRPC parameter map, as tritonclient does: strings → `string_param`, booleans →
 * `bool_param`, integers (number or BigInt) → `int64_param`, other numbers → `double_param`.
 */
export function toInferParameters(values: Readonly<Record<string, ParameterValue>>): InferParameterMap {
  const out: InferParameterMap = {};
  for (const [key, v] of Object.entries(values)) {
    if (typeof v === 'string') out[key] = { string_param: v };
    else if (typeof v === 'boolean') out[key] = { bool_param: v };
    else if (typeof v === 'bigint') out[key] = { int64_param: v.toString() };
    else if (Number.isInteger(v)) out[key] = { int64_param: v };
    else out[key] = { double_param: v };
  }
  return out;
}

/** Parameters as a JSON object (HTTP request and response `parameters`); BigInt values are written as plain integers. */
export function parametersJson(params: Readonly<Record<string, ParameterValue>>): string {
  const parts = Object.entries(params).map(([k, v]) => `${JSON.stringify(k)}:${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}`);
  return `{${parts.join(',')}}`;
}
