/** Encodes a batch's requests for the worker and its responses for the main thread, one message each way. */
import { parametersOf, RESPONSE_PARAMETERS, type ParameterValue, type Request, type ResponseParameters, type SequenceInfo } from '../../callable/callable';
import { Cancellation, cancellationOf } from '../../base/cancellation';
import type { Tensor } from '../../tensor/tensor';
import { MOVABLE_BUFFER } from '../../callable/callable';
import { SEQUENCE_STATE, sequenceStateOf, type SequenceStateMark } from '../sequence-state-mark';
import { NEVER_ABORTED } from '../../callable/callable-marks';
import { decodeColumns, encodeColumns, TransferList } from './columns';
import { deserializeError, serializeError } from './error-transfer';
import type { WireBatch, WireResult } from './messages';
import type { Encoded } from './channel-common';

/**
 * Encodes requests: their inputs as columns (see columns.ts), and what is the same for every request once.
 * `copyAll` copies every buffer instead of moving it (the fallback for untransferable buffers).
 */
export function encodeRequests(requests: readonly Request[], copyAll = false): Encoded<WireBatch> {
  const transfers = new TransferList();
  let movable: Set<ArrayBufferLike> | undefined;
  if (!copyAll) {
    for (const r of requests) {
      const buffer = (r as { [MOVABLE_BUFFER]?: ArrayBufferLike })[MOVABLE_BUFFER];
      if (buffer) (movable ??= new Set()).add(buffer);
    }
  }
  const inputs = encodeColumns(
    requests.map((r) => r.inputs),
    transfers,
    copyAll,
    movable,
  );
  const first = requests[0];
  let parameters: Record<string, ParameterValue>[] | undefined;
  let ids: string[] | undefined;
  let sequences: (SequenceInfo | undefined)[] | undefined;
  let stateMarks: (SequenceStateMark | undefined)[] | undefined;
  let outputsVary = false;
  const live: number[] = [];
  const aborted: { index: number; reason: ReturnType<typeof serializeError> }[] = [];
  requests.forEach((r, index) => {
    if (parameters === undefined && hasKeys(r.parameters)) parameters = requests.map((q) => q.parameters);
    if (ids === undefined && r.id !== '') ids = requests.map((q) => q.id);
    if (sequences === undefined && r.sequence !== undefined) sequences = requests.map((q) => q.sequence);
    if (stateMarks === undefined && sequenceStateOf(r) !== undefined) stateMarks = requests.map(sequenceStateOf);
    if (!outputsVary && first && !sameList(r.requestedOutputs, first.requestedOutputs)) outputsVary = true;
    // A request without a Cancellation (a warmup request) cannot be aborted.
    const c = cancellationOf(r);
    if (c?.aborted) aborted.push({ index, reason: serializeError(c.reason) });
    else if (c) live.push(index);
  });
  const value: WireBatch = {
    count: requests.length,
    inputs,
    requestedOutputs: outputsVary ? requests.map((r) => r.requestedOutputs) : (first?.requestedOutputs ?? []),
    outputsVary,
    ...(parameters && { parameters }),
    ...(ids && { ids }),
    ...(sequences && { sequences }),
    ...(stateMarks && { stateMarks }),
    ...(live.length > 0 && { live }),
    ...(aborted.length > 0 && { aborted }),
  };
  return { value, transferList: transfers.list };
}

/** A request rebuilt in the worker; its AbortSignal is made only if the callable asks for it. */
class WorkerRequest implements Request {
  /** Calls another model through the main thread (set by the worker for each request it runs). */
  infer: Request['infer'];

  constructor(
    readonly inputs: Readonly<Record<string, Tensor>>,
    readonly parameters: Readonly<Record<string, ParameterValue>>,
    readonly requestedOutputs: readonly string[],
    readonly id: string,
    readonly cancellation: Cancellation | undefined,
    readonly sequence: SequenceInfo | undefined,
  ) {}

  get signal(): AbortSignal {
    return this.cancellation ? this.cancellation.signal : NEVER_ABORTED;
  }
}

const NO_PARAMETERS: Readonly<Record<string, ParameterValue>> = Object.freeze({});

/**
 * Rebuilds requests in the worker, with a Cancellation for each request the main thread may still abort
 * (`cancellations[i]`, to abort when its notice arrives); those aborted already arrive aborted.
 */
export function decodeRequests(wire: WireBatch): { requests: Request[]; cancellations: (Cancellation | undefined)[] } {
  const inputs = decodeColumns(wire.inputs, wire.count) as Record<string, Tensor>[];
  const cancellations: (Cancellation | undefined)[] = new Array(wire.count);
  if (wire.live) for (const i of wire.live) cancellations[i] = new Cancellation();
  if (wire.aborted) {
    for (const { index, reason } of wire.aborted) {
      const c = new Cancellation();
      c.abort(deserializeError(reason));
      cancellations[index] = c;
    }
  }
  const requests = inputs.map((tensors, i) => {
    const request = new WorkerRequest(
      tensors,
      wire.parameters?.[i] ?? NO_PARAMETERS,
      (wire.outputsVary ? wire.requestedOutputs[i] : wire.requestedOutputs) as readonly string[],
      wire.ids?.[i] ?? '',
      cancellations[i],
      wire.sequences?.[i],
    );
    const mark = wire.stateMarks?.[i];
    if (mark) (request as { [SEQUENCE_STATE]?: SequenceStateMark })[SEQUENCE_STATE] = mark;
    return request;
  });
  return { requests, cancellations };
}

/**
 * Encodes what a callable returned: a list of records as columns, anything else as it is (the main thread's
 * validation reports it). Output buffers are transferred (detached in the worker) or copied once.
 */
export function encodeResponses(responses: unknown, copyAll = false): Encoded<WireResult> {
  if (!Array.isArray(responses) || !responses.every(isRecord)) return { value: { raw: responses }, transferList: [] };
  const transfers = new TransferList();
  const outputs = encodeColumns(responses as Record<string, unknown>[], transfers, copyAll);
  // Symbol keys do not survive structured cloning: response parameters travel beside the columns.
  let parameters: (ResponseParameters | undefined)[] | undefined;
  responses.forEach((r: object, i) => {
    const p = parametersOf(r);
    if (p !== undefined) (parameters ??= new Array<ResponseParameters | undefined>(responses.length))[i] = p;
  });
  return { value: { count: responses.length, outputs, ...(parameters && { parameters }) }, transferList: transfers.list };
}

/** Rebuilds responses on the main thread (their count is checked by the instance). */
export function decodeResponses(wire: WireResult): unknown {
  if ('raw' in wire) return wire.raw;
  const responses = decodeColumns(wire.outputs, wire.count);
  wire.parameters?.forEach((p, i) => {
    if (p !== undefined) (responses[i] as Record<PropertyKey, unknown>)[RESPONSE_PARAMETERS] = p;
  });
  return responses;
}

function hasKeys(record: object): boolean {
  for (const _ in record) return true;
  return false;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
