import { NEVER_ABORTED, type Request } from '../../../lib/callable';
import { TritonError, UnrecoverableError } from '../../../lib/errors';
import { decodeRequests, decodeResponses, encodeRequests, encodeResponses } from '../../../lib/instances/worker/batch-codec';
import { deserializeError, serializeError } from '../../../lib/instances/worker/error-transfer';
import type { WireRequest, WireResponse } from '../../../lib/instances/worker/messages';
import { packBytes, unpackBytes } from '../../../lib/instances/worker/tensor-transfer';
import type { Tensor } from '../../../lib/tensor/tensor';

/** What the other thread receives: a structured clone with the transfer list, as postMessage makes. */
function send<T>(encoded: { value: T; transferList: ArrayBuffer[] }): T {
  return structuredClone(encoded.value, { transfer: encoded.transferList });
}

const request = (inputs: Record<string, Tensor>, signal: AbortSignal = NEVER_ABORTED): Request => ({
  inputs,
  parameters: { p: 7n, q: 'v' },
  requestedOutputs: ['y'],
  id: 'r',
  signal,
});

const detached = (b: ArrayBufferLike) => b.byteLength === 0;

describe('encodeRequests / decodeRequests', () => {
  it('transfers a buffer the tensor owns: detached here, the same bytes there, no copy', () => {
    const x = new Float32Array([1, 2, 3]);
    const encoded = encodeRequests([request({ x: { dtype: 'FP32', shape: [3], data: x } })]);
    expect(encoded.transferList).toEqual([x.buffer]);
    const [got] = decodeRequests(send(encoded), () => NEVER_ABORTED);
    expect(detached(x.buffer)).toBe(true);
    expect(got!.inputs.x).toEqual({ dtype: 'FP32', shape: [3], data: new Float32Array([1, 2, 3]) });
    expect(got!.parameters).toEqual({ p: 7n, q: 'v' });
    expect(got!.requestedOutputs).toEqual(['y']);
  });

  it('copies a view into a larger buffer once into a private buffer and leaves the large one alone', () => {
    const body = Buffer.alloc(64 * 1024);
    const view = new Int32Array(body.buffer, body.byteOffset + 16, 4);
    view.set([1, -2, 3, -4]);
    const encoded = encodeRequests([request({ n: { dtype: 'INT32', shape: [4], data: view } })]);
    expect(encoded.transferList).toHaveLength(1);
    expect(encoded.transferList[0]).not.toBe(body.buffer);
    expect(encoded.transferList[0]!.byteLength).toBe(16);
    const [got] = decodeRequests(send(encoded), () => NEVER_ABORTED);
    expect(detached(body.buffer)).toBe(false);
    const data = got!.inputs.n!.data as Int32Array;
    expect(Array.from(data)).toEqual([1, -2, 3, -4]);
    expect(data.buffer.byteLength).toBe(16);
  });

  it('copies a small Buffer from Node’s pool instead of moving the pool', () => {
    const pooled = Buffer.from([1, 0, 1]);
    expect(pooled.buffer.byteLength).toBeGreaterThan(3);
    const encoded = encodeRequests([request({ b: { dtype: 'BOOL', shape: [3], data: pooled } })]);
    const [got] = decodeRequests(send(encoded), () => NEVER_ABORTED);
    expect(detached(pooled.buffer)).toBe(false);
    expect(got!.inputs.b!.data).toBeInstanceOf(Uint8Array);
    expect(Array.from(got!.inputs.b!.data as Uint8Array)).toEqual([1, 0, 1]);
  });

  it('packs the copies of one input across a batch back to back in one buffer, aligned per element size', () => {
    const bodies = [Buffer.alloc(4096), Buffer.alloc(4096)];
    const x0 = new Float32Array(bodies[0]!.buffer, bodies[0]!.byteOffset + 8, 3);
    const x1 = new Float32Array(bodies[1]!.buffer, bodies[1]!.byteOffset + 4, 2);
    x0.set([1, 2, 3]);
    x1.set([4, 5]);
    const flags = bodies[0]!.subarray(100, 101);
    const wide = new Float64Array(bodies[1]!.buffer, bodies[1]!.byteOffset + 64, 1);
    wide[0] = 0.5;
    const encoded = encodeRequests([
      request({ x: { dtype: 'FP32', shape: [3], data: x0 }, w: { dtype: 'UINT8', shape: [1], data: flags } }),
      request({ x: { dtype: 'FP32', shape: [2], data: x1 }, w: { dtype: 'FP64', shape: [1], data: wide } }),
    ]);
    expect(encoded.transferList.map((b) => b.byteLength)).toEqual([20, 16]);
    const [r0, r1] = decodeRequests(send(encoded), () => NEVER_ABORTED);
    const [a, b] = [r0!.inputs.x!.data as Float32Array, r1!.inputs.x!.data as Float32Array];
    expect(a.buffer).toBe(b.buffer);
    expect([a.byteOffset, b.byteOffset]).toEqual([0, 12]);
    expect(Array.from(new Float32Array(a.buffer))).toEqual([1, 2, 3, 4, 5]);
    expect((r1!.inputs.w!.data as Float64Array).byteOffset).toBe(8);
    expect(Array.from(r1!.inputs.w!.data as Float64Array)).toEqual([0.5]);
  });

  it('transfers one buffer once when several views cover it, and shares a SharedArrayBuffer', () => {
    const whole = new BigInt64Array([1n, 2n, 3n, 4n]);
    const a = whole.subarray(0, 2);
    const b = whole.subarray(2, 4);
    const shared = new Int32Array(new SharedArrayBuffer(8));
    const encoded = encodeRequests([
      request({ a: { dtype: 'INT64', shape: [2], data: a }, s: { dtype: 'INT32', shape: [2], data: shared } }),
      request({ a: { dtype: 'INT64', shape: [2], data: b } }),
    ]);
    expect(encoded.transferList).toEqual([whole.buffer]);
    const [r0, r1] = decodeRequests(send(encoded), () => NEVER_ABORTED);
    expect(Array.from(r0!.inputs.a!.data as BigInt64Array)).toEqual([1n, 2n]);
    expect(Array.from(r1!.inputs.a!.data as BigInt64Array)).toEqual([3n, 4n]);
    expect((r0!.inputs.a!.data as BigInt64Array).buffer).toBe((r1!.inputs.a!.data as BigInt64Array).buffer);
    shared[1] = 42; // the same memory, not a copy
    expect((r0!.inputs.s!.data as Int32Array)[1]).toBe(42);
  });

  it('packs BYTES elements into one transferred buffer and unpacks them as Buffer views', () => {
    const body = Buffer.from('xxhelloyyworld!');
    const elements = [body.subarray(2, 7), body.subarray(9, 15), Buffer.alloc(0)];
    const encoded = encodeRequests([request({ s: { dtype: 'BYTES', shape: [3], data: elements } })]);
    expect(encoded.transferList).toHaveLength(1);
    const [got] = decodeRequests(send(encoded), () => NEVER_ABORTED);
    const data = got!.inputs.s!.data as Uint8Array[];
    expect(data.map((e) => Buffer.from(e).toString())).toEqual(['hello', 'world!', '']);
    expect(data.every((e) => Buffer.isBuffer(e) && e.buffer === data[0]!.buffer)).toBe(true);
    expect(body.toString()).toBe('xxhelloyyworld!');
  });

  it('copies everything when asked (the fallback for untransferable buffers)', () => {
    const x = new Float32Array([1]);
    const encoded = encodeRequests([request({ x: { dtype: 'FP32', shape: [1], data: x } })], true);
    send(encoded);
    expect(detached(x.buffer)).toBe(false);
  });

  it('states each request’s abort state and the reason of one already aborted', () => {
    const live = new AbortController();
    const gone = new AbortController();
    gone.abort(new Error('client went away'));
    const wire = send(encodeRequests([request({}), request({}, live.signal), request({}, gone.signal)]));
    expect(wire.map((w: WireRequest) => w.abort)).toEqual(['never', 'live', 'aborted']);
    expect(wire[2]!.reason).toMatchObject({ kind: 'error', message: 'client went away' });
    const seen: string[] = [];
    decodeRequests(wire, (i, w) => {
      seen.push(`${i}:${w.abort}`);
      return NEVER_ABORTED;
    });
    expect(seen).toEqual(['0:never', '1:live', '2:aborted']);
  });
});

describe('encodeResponses / decodeResponses', () => {
  it('moves @batch-style outputs (views splitting one buffer) with one transfer and no copy', () => {
    const y = new Float32Array([1, 2, 3, 4, 5]);
    const responses = [
      { y: { shape: [2], data: y.subarray(0, 2) }, s: { shape: [1], data: ['héllo'] } },
      { y: { dtype: 'FP32', shape: [3], data: y.subarray(2) }, s: { shape: [1], data: [Buffer.from('x')] } },
    ];
    const encoded = encodeResponses(responses);
    expect(encoded.transferList).toContain(y.buffer);
    const got = decodeResponses(send(encoded)) as { y: { dtype?: string; shape: number[]; data: Float32Array }; s: { data: Buffer[] } }[];
    expect(detached(y.buffer)).toBe(true);
    expect(got[0]!.y).toEqual({ shape: [2], data: new Float32Array([1, 2]) });
    expect(got[1]!.y).toEqual({ dtype: 'FP32', shape: [3], data: new Float32Array([3, 4, 5]) });
    expect(got[0]!.y.data.buffer).toBe(got[1]!.y.data.buffer);
    expect(got[0]!.s.data[0]!.toString('utf8')).toBe('héllo');
    expect(got[1]!.s.data[0]!.toString('utf8')).toBe('x');
  });

  it('passes what is not a tensor through, for the main thread’s validation to report', () => {
    const wire = send(encodeResponses([{ y: { shape: [2], data: [1, 2] } }, null, 'text']));
    expect((wire as WireResponse[]).map((w) => ('raw' in w ? 'raw' : 'values'))).toEqual(['values', 'raw', 'raw']);
    expect(decodeResponses(wire)).toEqual([{ y: { shape: [2], data: [1, 2] } }, null, 'text']);
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
