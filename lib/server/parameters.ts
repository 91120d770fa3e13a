import type { ParameterValue, SequenceInfo } from '../callable';
import { invalidArgument } from '../errors';
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
      if (typeof value === 'string') {
        out.sequence = { start: false, end: false, ...out.sequence, id: value };
        return;
      }
      if ((typeof value === 'number' && Number.isInteger(value) && value >= 0) || (typeof value === 'bigint' && value >= 0n && value < 2n ** 64n)) {
        out.sequence = { start: false, end: false, ...out.sequence, id: value };
        return;
      }
      throw invalidArgument(`invalid value type for 'sequence_id' parameter, expected int64_param or string_param, got ${describeValue(value)}`);
    default:
      // headers is accepted and not used.
      return;
  }
}

function unsigned(key: string, value: unknown): number {
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw invalidArgument(`parameter '${key}' must be a non-negative integer, got ${describeValue(value)}`);
  return n;
}
