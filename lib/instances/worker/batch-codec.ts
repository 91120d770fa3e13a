/** Encodes a batch's requests for the worker and its responses for the main thread, one message each way. */
import { NEVER_ABORTED, type Request } from '../../callable';
import type { Tensor } from '../../tensor/tensor';
import { serializeError } from './error-transfer';
import type { WireRequest, WireResponse } from './messages';
import { TensorMover, decodeValue, type WireValue } from './tensor-transfer';

/** An encoded message part and the buffers to transfer with it. */
export interface Encoded<T> {
  readonly value: T;
  readonly transferList: ArrayBuffer[];
}

/** Encodes requests; their input buffers are transferred (detached here) or privately copied, see TensorMover. */
export function encodeRequests(requests: readonly Request[], copyAll = false): Encoded<WireRequest[]> {
  const mover = new TensorMover(copyAll);
  for (const r of requests) for (const name in r.inputs) mover.noteValue(r.inputs[name], name);
  const value = requests.map((r): WireRequest => {
    const inputs: Record<string, WireValue> = {};
    for (const name in r.inputs) inputs[name] = mover.encode(r.inputs[name], name);
    const { signal } = r;
    const base = { inputs, parameters: r.parameters, requestedOutputs: r.requestedOutputs, id: r.id };
    if (signal === NEVER_ABORTED) return { ...base, abort: 'never' };
    if (signal.aborted) return { ...base, abort: 'aborted', reason: serializeError(signal.reason) };
    return { ...base, abort: 'live' };
  });
  return { value, transferList: mover.transferList };
}

/** Rebuilds requests in the worker; `signalFor` gives each one its AbortSignal. */
export function decodeRequests(wire: readonly WireRequest[], signalFor: (index: number, request: WireRequest) => AbortSignal): Request[] {
  return wire.map((w, i) => {
    const inputs: Record<string, Tensor> = {};
    for (const name in w.inputs) inputs[name] = decodeValue(w.inputs[name] as WireValue) as Tensor;
    return { inputs, parameters: w.parameters, requestedOutputs: w.requestedOutputs, id: w.id, signal: signalFor(i, w) };
  });
}

/** Encodes what a callable returned; output buffers are transferred (detached in the worker) or privately copied. */
export function encodeResponses(responses: unknown, copyAll = false): Encoded<WireResponse[] | { raw: unknown }> {
  if (!Array.isArray(responses)) return { value: { raw: responses }, transferList: [] };
  const mover = new TensorMover(copyAll);
  for (const r of responses) if (isRecord(r)) for (const name in r) mover.noteValue(r[name], name);
  const value = responses.map((r: unknown): WireResponse => {
    if (!isRecord(r)) return { raw: r };
    const values: Record<string, WireValue> = {};
    for (const name in r) values[name] = mover.encode(r[name], name);
    return { values };
  });
  return { value, transferList: mover.transferList };
}

/** Rebuilds responses on the main thread (their count is checked by the instance). */
export function decodeResponses(wire: readonly WireResponse[] | { raw: unknown }): unknown {
  if (!Array.isArray(wire)) return (wire as { raw: unknown }).raw;
  return wire.map((w: WireResponse) => {
    if ('raw' in w) return w.raw;
    const out: Record<string, unknown> = {};
    for (const name in w.values) out[name] = decodeValue(w.values[name] as WireValue);
    return out;
  });
}

/** True for an error thrown by postMessage when something cannot be cloned or transferred. */
export function isDataCloneError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { name, code } = err as { name?: unknown; code?: unknown };
  return name === 'DataCloneError' || code === 'ERR_INVALID_TRANSFER_OBJECT';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
