import { MOVABLE_BUFFER, type Request } from '../../../lib/callable/callable';
import { NEVER_ABORTED } from '../../../lib/callable/callable-marks';
import { Cancellation, CANCELLATION } from '../../../lib/base/cancellation';
import { TritonError, UnrecoverableError } from '../../../lib/base/errors';
import { decodeRequests, decodeResponses, encodeRequests, encodeResponses } from '../../../lib/instances/worker/batch-codec';
import { packBytes, TRANSFER_THRESHOLD_BYTES, unpackBytes } from '../../../lib/instances/worker/columns';
import { deserializeError, serializeError } from '../../../lib/instances/worker/error-transfer';
import type { Tensor } from '../../../lib/tensor/tensor';

/** What the other thread receives: a structured clone with the transfer list, as postMessage makes. */
function send<T>(encoded: { value: T; transferList: ArrayBuffer[] }): T {
  return structuredClone(encoded.value, { transfer: encoded.transferList });
}

const request = (inputs: Record<string, Tensor>, signal: AbortSignal = NEVER_ABORTED, extra: Partial<Request> = {}): Request => ({
  inputs,
  parameters: {},
  requestedOutputs: ['y'],
  id: '',
  signal,
  ...extra,
});

/** Requests as the worker sees them. */
const across = (requests: Request[], copyAll = false) => decodeRequests(send(encodeRequests(requests, copyAll))).requests;

const detached = (b: ArrayBufferLike) => b.byteLength === 0;

/** Typed arrays as their type's name and values: a structured clone under jest makes them in another realm. */
const plain = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (_, v: unknown) => (ArrayBuffer.isView(v) ? { [v.constructor.name]: Array.from(v as Uint8Array) } : v)));

describe('encodeRequests / decodeRequests', () => {
  it('moves the buffer a lone tensor owns: detached here, the same bytes there, no copy', () => {
    const x = new Float32Array([1, 2, 3]);
    const encoded = encodeRequests([request({ x: { dtype: 'FP32', shape: [3], data: x } })]);
    expect(encoded.transferList).toEqual([x.buffer]);
    const [got] = decodeRequests(send(encoded)).requests;
    expect(detached(x.buffer)).toBe(true);
    expect(got!.inputs.x).toEqual({ dtype: 'FP32', shape: [3], data: new Float32Array([1, 2, 3]) });
  });

  it('sends one array per input for the whole batch, each request a view of its rows', () => {
    const bodies = [Buffer.alloc(4096), Buffer.alloc(4096)];
    const x0 = new Float32Array(bodies[0]!.buffer, bodies[0]!.byteOffset + 8, 3);
    const x1 = new Float32Array(bodies[1]!.buffer, bodies[1]!.byteOffset + 4, 2);
    x0.set([1, 2, 3]);
    x1.set([4, 5]);
    const encoded = encodeRequests([request({ x: { dtype: 'FP32', shape: [1, 3], data: x0 } }), request({ x: { dtype: 'FP32', shape: [1, 2], data: x1 } })]);
    expect(encoded.value.inputs).toHaveLength(1);
    expect(encoded.value.inputs[0]!.shapes).toEqual([2, 1, 3, 2, 1, 2]);
    expect(encoded.transferList.map((b) => b.byteLength)).toEqual([20]);
    const [r0, r1] = decodeRequests(send(encoded)).requests;
    const [a, b] = [r0!.inputs.x!.data as Float32Array, r1!.inputs.x!.data as Float32Array];
    expect(a).toBeInstanceOf(Float32Array);
    expect(a.buffer).toBe(b.buffer);
    expect([a.byteOffset, b.byteOffset]).toEqual([0, 12]);
    expect(Array.from(a)).toEqual([1, 2, 3]);
    expect(Array.from(b)).toEqual([4, 5]);
    expect([r0!.inputs.x!.shape, r1!.inputs.x!.shape]).toEqual([[1, 3], [1, 2]]);
    // The request bodies were copied from, not moved.
    expect(bodies.every((body) => !detached(body.buffer))).toBe(true);
  });

  it('copies a small Buffer from Node’s pool instead of moving the pool', () => {
    const pooled = Buffer.from([1, 0, 1]);
    expect(pooled.buffer.byteLength).toBeGreaterThan(3);
    const [got] = across([request({ b: { dtype: 'BOOL', shape: [3], data: pooled } })]);
    expect(detached(pooled.buffer)).toBe(false);
    expect(got!.inputs.b!.data).toBeInstanceOf(Uint8Array);
    expect(Array.from(got!.inputs.b!.data as Uint8Array)).toEqual([1, 0, 1]);
  });

  it('moves one buffer once when the batch’s arrays split it back to back', () => {
    const whole = new BigInt64Array([1n, 2n, 3n, 4n]);
    const encoded = encodeRequests([
      request({ a: { dtype: 'INT64', shape: [2], data: whole.subarray(0, 2) } }),
      request({ a: { dtype: 'INT64', shape: [2], data: whole.subarray(2, 4) } }),
    ]);
    expect(encoded.transferList).toEqual([whole.buffer]);
    const [r0, r1] = decodeRequests(send(encoded)).requests;
    expect(Array.from(r0!.inputs.a!.data as BigInt64Array)).toEqual([1n, 2n]);
    expect(Array.from(r1!.inputs.a!.data as BigInt64Array)).toEqual([3n, 4n]);
  });

  it(`moves large arrays that own their buffers (${TRANSFER_THRESHOLD_BYTES / 1024} KiB and more per input) instead of copying them`, () => {
    const n = TRANSFER_THRESHOLD_BYTES / 8;
    const a = new Float32Array(n).fill(1);
    const b = new Float32Array(n).fill(2);
    const encoded = encodeRequests([request({ x: { dtype: 'FP32', shape: [n], data: a } }), request({ x: { dtype: 'FP32', shape: [n], data: b } })]);
    expect(encoded.transferList).toEqual([a.buffer, b.buffer]);
    const [r0, r1] = decodeRequests(send(encoded)).requests;
    expect([detached(a.buffer), detached(b.buffer)]).toEqual([true, true]);
    expect((r0!.inputs.x!.data as Float32Array)[n - 1]).toBe(1);
    expect((r1!.inputs.x!.data as Float32Array)[0]).toBe(2);
  });

  it('moves a large input with the request body it views when the request says nobody else reads that body', () => {
    const n = TRANSFER_THRESHOLD_BYTES / 4;
    const body = new ArrayBuffer(64 + n * 4);
    const x = new Float32Array(body, 64, n).fill(3);
    const moved = encodeRequests([{ ...request({ x: { dtype: 'FP32', shape: [n], data: x } }), [MOVABLE_BUFFER]: body } as Request]);
    expect(moved.transferList).toEqual([body]);
    const [got] = decodeRequests(send(moved)).requests;
    expect(detached(body)).toBe(true);
    const data = got!.inputs.x!.data as Float32Array;
    expect([data.byteOffset, data.length, data[n - 1]]).toEqual([64, n, 3]);

    // Without the request's word, the body stays and the input is copied out of it.
    const kept = new ArrayBuffer(64 + n * 4);
    const y = new Float32Array(kept, 64, n).fill(4);
    const copied = encodeRequests([request({ x: { dtype: 'FP32', shape: [n], data: y } })]);
    expect(copied.transferList).not.toContain(kept);
    expect((decodeRequests(send(copied)).requests[0]!.inputs.x!.data as Float32Array)[0]).toBe(4);
    expect(detached(kept)).toBe(false);
  });

  it('copies small arrays that own their buffers into one, leaving them intact', () => {
    const a = new Int32Array([1, 2]);
    const b = new Int32Array([3]);
    const encoded = encodeRequests([request({ n: { dtype: 'INT32', shape: [2], data: a } }), request({ n: { dtype: 'INT32', shape: [1], data: b } })]);
    expect(encoded.transferList.map((x) => x.byteLength)).toEqual([12]);
    const [r0, r1] = decodeRequests(send(encoded)).requests;
    expect([Array.from(a), Array.from(b)]).toEqual([[1, 2], [3]]);
    expect([Array.from(r0!.inputs.n!.data as Int32Array), Array.from(r1!.inputs.n!.data as Int32Array)]).toEqual([[1, 2], [3]]);
  });

  it('shares a SharedArrayBuffer: the same memory, not a copy', () => {
    const shared = new Int32Array(new SharedArrayBuffer(8));
    const encoded = encodeRequests([request({ s: { dtype: 'INT32', shape: [2], data: shared } })]);
    expect(encoded.transferList).toEqual([]);
    const [r0] = decodeRequests(send(encoded)).requests;
    shared[1] = 42;
    expect((r0!.inputs.s!.data as Int32Array)[1]).toBe(42);
  });

  it('packs the BYTES elements of the batch into one transferred buffer and unpacks them as Buffer views', () => {
    const body = Buffer.from('xxhelloyyworld!');
    const encoded = encodeRequests([
      request({ s: { dtype: 'BYTES', shape: [3], data: [body.subarray(2, 7), body.subarray(9, 15), Buffer.alloc(0)] } }),
      request({ s: { dtype: 'BYTES', shape: [1], data: [Buffer.from('a\0b')] } }),
    ]);
    expect(encoded.transferList).toHaveLength(1);
    const [r0, r1] = decodeRequests(send(encoded)).requests;
    const data = r0!.inputs.s!.data as Uint8Array[];
    expect(data.map((e) => Buffer.from(e).toString())).toEqual(['hello', 'world!', '']);
    expect((r1!.inputs.s!.data as Uint8Array[]).map((e) => Buffer.from(e).toString())).toEqual(['a\0b']);
    expect(data.every((e) => Buffer.isBuffer(e) && e.buffer === data[0]!.buffer)).toBe(true);
    expect(body.toString()).toBe('xxhelloyyworld!');
  });

  it('keeps inputs that only some requests carry (optional inputs) with the right requests', () => {
    const [r0, r1, r2] = across([
      request({ x: { dtype: 'FP32', shape: [1], data: new Float32Array([1]) } }),
      request({ x: { dtype: 'FP32', shape: [1], data: new Float32Array([2]) }, m: { dtype: 'INT32', shape: [1], data: new Int32Array([9]) } }),
      request({ m: { dtype: 'INT32', shape: [2], data: new Int32Array([7, 8]) } }),
    ]);
    expect(Object.keys(r0!.inputs)).toEqual(['x']);
    expect(Object.keys(r1!.inputs).sort()).toEqual(['m', 'x']);
    expect(Object.keys(r2!.inputs)).toEqual(['m']);
    expect(Array.from(r1!.inputs.x!.data as Float32Array)).toEqual([2]);
    expect(Array.from(r1!.inputs.m!.data as Int32Array)).toEqual([9]);
    expect(r2!.inputs.m).toEqual({ dtype: 'INT32', shape: [2], data: new Int32Array([7, 8]) });
  });

  it('sends parameters, ids and requested outputs per request only when they differ', () => {
    const same = encodeRequests([request({}), request({})]).value;
    expect(same).toMatchObject({ requestedOutputs: ['y'], outputsVary: false });
    expect(same.parameters).toBeUndefined();
    expect(same.ids).toBeUndefined();
    const [r0, r1] = across([request({}, NEVER_ABORTED, { id: 'a', parameters: { p: 7n, q: 'v' } }), request({}, NEVER_ABORTED, { requestedOutputs: ['y', 'z'] })]);
    expect([r0!.id, r1!.id]).toEqual(['a', '']);
    expect([r0!.parameters, r1!.parameters]).toEqual([{ p: 7n, q: 'v' }, {}]);
    expect([r0!.requestedOutputs, r1!.requestedOutputs]).toEqual([['y'], ['y', 'z']]);
  });

  it('copies everything when asked (the fallback for untransferable buffers)', () => {
    const x = new Float32Array([1]);
    const encoded = encodeRequests([request({ x: { dtype: 'FP32', shape: [1], data: x } })], true);
    send(encoded);
    expect(detached(x.buffer)).toBe(false);
  });

  it('gives the worker a Cancellation for each request that can still be aborted, and aborted ones aborted', () => {
    const live = new Cancellation();
    const gone = new Cancellation();
    gone.abort(new Error('client went away'));
    const serverSide = new Cancellation();
    const withCancellation = { ...request({}), [CANCELLATION]: serverSide };
    const wire = send(encodeRequests([request({}), { ...request({}), [CANCELLATION]: live }, { ...request({}), [CANCELLATION]: gone }, withCancellation]));
    expect(wire.live).toEqual([1, 3]);
    const { requests, cancellations } = decodeRequests(wire);
    expect(cancellations[0]).toBeUndefined();
    expect(requests[0]!.signal).toBe(NEVER_ABORTED);
    expect(requests[1]!.signal.aborted).toBe(false);
    expect(requests[2]!.signal.aborted).toBe(true);
    expect((requests[2]!.signal.reason as Error).message).toBe('client went away');
    cancellations[3]!.abort(new TritonError('CANCELLED', 'gone'));
    expect(requests[3]!.signal.aborted).toBe(true);
  });

  it('does not make an AbortSignal on the sending side for a request that carries its Cancellation', () => {
    const cancellation = new Cancellation();
    let made = false;
    const r = {
      ...request({}),
      [CANCELLATION]: cancellation,
      get signal(): AbortSignal {
        made = true;
        return cancellation.signal;
      },
    };
    expect(encodeRequests([r]).value.live).toEqual([0]);
    expect(made).toBe(false);
  });
});

describe('encodeResponses / decodeResponses', () => {
  it('moves @batch-style outputs (views splitting one buffer) with one transfer and no copy', () => {
    const y = new Float32Array([1, 2, 3, 4, 5]);
    const responses = [
      { y: { dtype: 'FP32', shape: [2], data: y.subarray(0, 2) }, s: { shape: [1], data: ['héllo'] } },
      { y: { dtype: 'FP32', shape: [3], data: y.subarray(2) }, s: { shape: [1], data: [Buffer.from('x')] } },
    ];
    const encoded = encodeResponses(responses);
    expect(encoded.transferList).toContain(y.buffer);
    const got = decodeResponses(send(encoded)) as { y: { dtype?: string; shape: number[]; data: Float32Array }; s: { data: Buffer[] } }[];
    expect(detached(y.buffer)).toBe(true);
    expect(got[0]!.y).toEqual({ dtype: 'FP32', shape: [2], data: new Float32Array([1, 2]) });
    expect(got[1]!.y).toEqual({ dtype: 'FP32', shape: [3], data: new Float32Array([3, 4, 5]) });
    expect(got[0]!.y.data.buffer).toBe(got[1]!.y.data.buffer);
    expect(got[0]!.s.data[0]!.toString('utf8')).toBe('héllo');
    expect(got[1]!.s.data[0]!.toString('utf8')).toBe('x');
  });

  it('keeps what validation must see: a missing dtype, a dtype that differs, data that does not fit its shape', () => {
    const responses = () => [
      { y: { shape: [2], data: new Float32Array([1, 2, 3]) }, z: { dtype: 'INT32', shape: [1], data: new Int32Array([1]) } },
      { y: { shape: [1], data: new Float32Array([4]) }, z: { dtype: 'FP32', shape: [1], data: new Float32Array([1]) } },
    ];
    expect(decodeResponses(send(encodeResponses(responses())))).toEqual(responses());
    expect(encodeResponses(responses()).value).toMatchObject({ outputs: [{ data: { kind: 'packed' } }, { dtypes: ['INT32', 'FP32'], data: { kind: 'parts' } }] });
  });

  it('passes what is not a tensor through, for the main thread’s validation to report', () => {
    const mixed = [{ y: { shape: [2], data: [1, 2] } }, { y: 'text', z: { shape: 'x', data: new Uint8Array(1) } }];
    expect(plain(decodeResponses(send(encodeResponses(mixed))))).toEqual(plain(mixed));
    const notRecords = [{ y: { shape: [1], data: new Float32Array([1]) } }, null];
    expect(plain(decodeResponses(send(encodeResponses(notRecords))))).toEqual(plain(notRecords));
    expect(decodeResponses(send(encodeResponses('not a list')))).toBe('not a list');
  });
});

describe('packBytes / unpackBytes', () => {
  it.each([[[]], [['']], [['a', 'bc', '']], [[new Uint8Array([0, 255, 0]), 'ü']]])('round-trips %j', (elements) => {
    const packed = packBytes(elements);
    const out = unpackBytes(packed, elements.length);
    expect(out.map((e) => [...e])).toEqual(elements.map((e) => [...(typeof e === 'string' ? Buffer.from(e) : e)]));
  });
});

describe('serializeError / deserializeError', () => {
  const roundTrip = (err: unknown) => deserializeError(structuredClone(serializeError(err)));

  it('keeps an UnrecoverableError an UnrecoverableError', () => {
    const err = roundTrip(new UnrecoverableError('device lost'));
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(err.message).toBe('device lost');
  });

  it('keeps a TritonError’s code', () => {
    const err = roundTrip(new TritonError('INVALID_ARGUMENT', 'bad shape'));
    expect(err).toBeInstanceOf(TritonError);
    expect((err as TritonError).code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe('bad shape');
  });

  it('keeps an ordinary error’s name, message and the stack where it was thrown', () => {
    const original = new RangeError('out of range');
    const err = roundTrip(original);
    expect(err).not.toBeInstanceOf(TritonError);
    expect(err.name).toBe('RangeError');
    expect(err.message).toBe('out of range');
    expect(err.stack).toBe(original.stack);
  });

  it('recognises errors by name, for a module that carries its own copy of tstriton', () => {
    class UnrecoverableErrorCopy extends Error {
      override name = 'UnrecoverableError';
    }
    expect(roundTrip(new UnrecoverableErrorCopy('copy'))).toBeInstanceOf(UnrecoverableError);
    expect(roundTrip('a string')).toMatchObject({ message: 'a string' });
  });
});
