import { runInNewContext } from 'node:vm';
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { Cancellation } from '../../../lib/base/cancellation';
import type { InferenceRequest, InferenceResponse } from '../../../lib/model/inference';
import { packRequest, unpackRequest, packResponse, Staging, type PackedRequest, type PackedResponse } from '../../../lib/server/front-end/messages';

/** Posts `value` through a real MessageChannel with `transfer`, and reads it back on the other side. */
function cross<T>(value: T, transfer: ArrayBuffer[]): T {
  const { port1, port2 } = new MessageChannel();
  try {
    port1.postMessage(value, transfer);
    return receiveMessageOnPort(port2)?.message as T;
  } finally {
    port1.close();
  }
}

function request(inputs: InferenceRequest['inputs'], extra: Partial<InferenceRequest> = {}): InferenceRequest {
  return { modelName: 'm', id: 'r', inputs, parameters: {}, cancellation: new Cancellation(), ...extra };
}

describe('front-end thread messages', () => {
  it('copy small tensors into shared chunks sized by the last message, and large ones into buffers of their own', () => {
    const staging = new Staging();
    const message = () => Array.from({ length: 100 }, (_, i) => staging.copy(new Float64Array([i, i + 0.5])) as Float64Array);
    const first = message();
    const large = staging.copy(new Uint8Array(20_000).fill(9)) as Uint8Array;
    const moved = staging.take();
    expect(first.every((v, i) => v instanceof Float64Array && v[0] === i && v[1] === i + 0.5 && v.byteOffset % 8 === 0)).toBe(true);
    expect(large.buffer.byteLength).toBe(20_000);
    expect(moved).toContain(large.buffer);
    // Fewer buffers than tensors, even before the size is known.
    expect(new Set(first.map((v) => v.buffer)).size).toBeLessThan(100);
    // A second message of the same size fits one chunk.
    const second = message();
    expect(new Set(second.map((v) => v.buffer)).size).toBe(1);
    expect(staging.take()).toHaveLength(1);
    // The next message starts afresh.
    expect(staging.take()).toEqual([]);
  });

  it("move a request's own body to the core thread without copying it, its tensors still views on it", () => {
    const body = new ArrayBuffer(64 * 1024);
    new Float32Array(body, 16, 4).set([1, 2, 3, 4]);
    const data = new Float32Array(body, 16, 4);
    const staging = new Staging();
    const packed = packRequest(request([{ name: 'x', tensor: { dtype: 'FP32', shape: [1, 4], data } }], { movableBuffer: body }), staging);
    const transfer = staging.take();
    expect(transfer).toEqual([body]);
    const arrived = cross(packed, transfer);
    // Moved: the sender's buffer is detached, and the receiver's tensor is a view on the body it received.
    expect(body.byteLength).toBe(0);
    const tensor = arrived.inputs[0]!.tensor;
    expect(Array.from(tensor.data as Float32Array)).toEqual([1, 2, 3, 4]);
    expect((tensor.data as Float32Array).buffer).toBe(arrived.movableBuffer);
    expect((tensor.data as Float32Array).byteOffset).toBe(16);
  });

  it('copy out a tensor that is a window on a larger buffer, so the message carries its bytes only', () => {
    const shared = new ArrayBuffer(1 << 20);
    const data = new Int32Array(shared, 1024, 2);
    data.set([7, 8]);
    const bytes = new Uint8Array(shared, 4096, 3);
    bytes.set([1, 2, 3]);
    const staging = new Staging();
    const packed = packRequest(
      request([
        { name: 'x', tensor: { dtype: 'INT32', shape: [2], data } },
        { name: 's', tensor: { dtype: 'BYTES', shape: [1], data: [bytes] } },
      ]),
      staging,
    );
    const transfer = staging.take();
    const arrived = cross(packed, transfer);
    expect(shared.byteLength).toBe(1 << 20);
    const x = arrived.inputs[0]!.tensor.data as Int32Array;
    expect(Array.from(x)).toEqual([7, 8]);
    const s = (arrived.inputs[1]!.tensor.data as Uint8Array[])[0]!;
    expect(Array.from(s)).toEqual([1, 2, 3]);
    // Both small tensors were copied into one chunk that moved with the message, not the megabyte they sat in.
    expect(transfer).toHaveLength(1);
    expect(x.buffer).toBe(s.buffer);
    expect(x.buffer.byteLength).toBeLessThan(shared.byteLength);
    // The request's cancellation and pooled memory stay on the front-end thread.
    expect('cancellation' in arrived).toBe(false);
  });

  it("copy a response's outputs, leaving buffers the core still holds (a batch, the cache) intact", () => {
    const batch = new Float32Array([1, 2, 3, 4, 5, 6]);
    const response: InferenceResponse = { id: 'r', modelName: 'm', modelVersion: '1', outputs: [{ name: 'y', tensor: { dtype: 'FP32', shape: [1, 2], data: batch.subarray(2, 4) } }] };
    const staging = new Staging();
    const packed = packResponse(response, staging);
    const arrived = cross<PackedResponse>(packed, staging.take());
    expect(batch.buffer.byteLength).toBe(24);
    expect(Array.from(batch)).toEqual([1, 2, 3, 4, 5, 6]);
    const y = arrived.outputs[0]!.tensor.data as Float32Array;
    expect(Array.from(y)).toEqual([3, 4]);
    expect(y.byteLength).toBe(8);
  });

  it("view arrived tensors with this realm's typed arrays over the same bytes", () => {
    // A BigInt64Array made in another realm, as a message's objects are when the core runs in a vm context.
    const foreign = runInNewContext('new BigInt64Array([5n, 6n])') as BigInt64Array;
    expect(foreign instanceof BigInt64Array).toBe(false);
    const packed = { modelName: 'm', id: '', parameters: {}, inputs: [{ name: 'x', tensor: { dtype: 'INT64', shape: [2], data: foreign } }] } as unknown as PackedRequest;
    const [x] = unpackRequest(packed, new Cancellation()).inputs;
    expect(x!.tensor.data).toBeInstanceOf(BigInt64Array);
    expect(Array.from(x!.tensor.data as BigInt64Array)).toEqual([5n, 6n]);
    expect((x!.tensor.data as BigInt64Array).buffer).toBe(foreign.buffer);
  });
});
