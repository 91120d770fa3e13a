import type { ParameterValue, SequenceInfo } from '../callable/callable';
import { invalidArgument } from '../base/errors';
import { describeValue, setEntry } from '../tensor/wire-value';

/** Request parameters split into the reserved ones the server acts on and the custom ones for the model. */
export interface RequestParameters {
  parameters: Record<string, ParameterValue>;
  priority?: number;
  timeoutMicroseconds?: number;
  binaryDataOutput: boolean;
  /** `sequence_id`, `sequence_start`, `sequence_end`, when any was given (an id of 0 or '' means none). */
  sequence?: SequenceInfo;
}

/** Keys the protocol reserves; they never reach the callable as custom parameters. */
const RESERVED = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'headers', 'binary_data_output']);

/**
 * Splits a request's `parameters` object (JSON, or gRPC parameters already turned into plain values).
 * Keys starting with `triton_` are refused as Triton refuses them, except those a transport allows
 * (gRPC clients send `triton_enable_empty_final_response`).
 */
export function parseParameters(raw: unknown, where: string, allowedTritonKeys: ReadonlySet<string> = EMPTY): RequestParameters {
  const out: RequestParameters = { parameters: {}, binaryDataOutput: false };
  if (raw === undefined || raw === null) return out;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalidArgument(`${where} 'parameters' must be an object, got ${describeValue(raw)}`);
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (key.startsWith('triton_')) {
      if (allowedTritonKeys.has(key)) continue;
      throw invalidArgument("parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.");
    }
    if (RESERVED.has(key)) {
      applyReserved(out, key, value);
      continue;
    }
    if (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint' || (typeof value === 'number' && Number.isFinite(value))) {
      setEntry(out.parameters, key, value);
    } else {
      throw invalidArgument(`parameter '${key}' has an invalid type: expected a string, integer, boolean or double, got ${describeValue(value)}`);
    }
  }
  return out;
}

const EMPTY: ReadonlySet<string> = new Set();

function applyReserved(out: RequestParameters, key: string, value: unknown): void {
  switch (key) {
    case 'priority':
      out.priority = unsigned(key, value);
      return;
    case 'timeout':
      out.timeoutMicroseconds = unsigned(key, value);
      return;
    case 'binary_data_output':
      if (typeof value !== 'boolean') throw invalidArgument(`parameter 'binary_data_output' must be a boolean, got ${describeValue(value)}`);
      out.binaryDataOutput = value;
      return;
    case 'sequence_start':
    case 'sequence_end':
      // As Triton: a model without a sequence batcher ignores them (its scheduler never reads them).
      if (typeof value !== 'boolean') throw invalidArgument(`invalid value type for '${key}' parameter, expected bool_param, got ${describeValue(value)}`);
      out.sequence = { id: out.sequence?.id ?? 0, start: out.sequence?.start ?? false, end: out.sequence?.end ?? false, [key === 'sequence_start' ? 'start' : 'end']: value };
      return;
    case 'sequence_id':
      out.sequence = { start: false, end: false, ...out.sequence, id: correlationId(value) };
      return;
    default:
      // headers is accepted and not used.
      return;
  }
}

/** The largest correlation id: Triton's are UINT64. */
const MAX_CORRELATION_ID = 2n ** 64n - 1n;

/**
 * A `sequence_id`: a string, or an integer from 0 to 2^64-1. A number (JSON's or gRPC's double) is exact below 2^53
 * only, so it must be a safe integer there (`1e3` is 1000); beyond it an id arrives exactly as a BigInt, which JSON
 * gives for an integer written in digits and gRPC for an int64 or uint64. A double beyond 2^53 (`1e20`, `1.8e19`)
 * may already be rounded, and is refused, as Triton refuses any double.
 */
function correlationId(value: unknown): SequenceInfo['id'] {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'bigint' && value >= 0n && value <= MAX_CORRELATION_ID) return value;
  const message = `invalid value type for 'sequence_id' parameter, expected int64_param or string_param, got ${describeValue(value)}`;
  const integral = typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value));
  if (!integral || (value as number | bigint) < 0) throw invalidArgument(message);
  throw invalidArgument(`${message}: a correlation id is an integer from 0 to ${MAX_CORRELATION_ID} written in digits (a number written with an exponent or a fraction is exact below 2^53 only), or a string`);
}

function unsigned(key: string, value: unknown): number {
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw invalidArgument(`parameter '${key}' must be a non-negative integer, got ${describeValue(value)}`);
  return n;
}
