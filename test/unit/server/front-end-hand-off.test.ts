import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { Cancellation } from '../../../lib/base/cancellation';
import type { InferenceRequest, InferenceResponse } from '../../../lib/model/inference';
import { Inbox, Outbox, ringMemory, type RingMemory } from '../../../lib/server/front-end/hand-off';
import type { HandOff, InferItem, ResultItem } from '../../../lib/server/front-end/messages';
import { decodeHanded, decodeOutgoing, encodeHanded, encodeOutgoing, packHanded, packOutgoing, type Handed, type Outgoing } from '../../../lib/server/front-end/records';

/** Posts a turn's message through a real MessageChannel (as the threads do), and reads it on the other side. */
function cross<P>(out: { message: HandOff<P>; transfer: ArrayBuffer[] } | undefined): HandOff<P> {
  if (out === undefined) throw new Error('nothing to send');
  const { port1, port2 } = new MessageChannel();
  try {
    port1.postMessage(out.message, out.transfer);
    return receiveMessageOnPort(port2)?.message as HandOff<P>;
  } finally {
    port1.close();
  }
}

function channel(memory: RingMemory = ringMemory()) {
  const toCore = new Outbox<Handed, InferItem>(memory, encodeHanded, packHanded);
  const core = new Inbox<InferItem, InferItem>(memory, decodeHanded, (item) => item);
  const send = (...items: Handed[]): InferItem[] => {
    for (const item of items) toCore.add(item);
    const got: InferItem[] = [];
    core.open(cross(toCore.take()), (item) => got.push(item));
    return got;
  };
  return { toCore, core, send };
}

function handed(id: number, request: Partial<InferenceRequest> = {}, extra: Partial<Handed> = {}): Handed {
  const inputs = [{ name: 'INPUT0', tensor: { dtype: 'FP32' as const, shape: [1, 2], data: new Float32Array([id, id + 0.5]) } }];
  return {
    id,
    modelName: 'identity_fp32',
    modelVersion: undefined,
    protocol: 'HTTP',
    unaryEndpoint: undefined,
    headers: undefined,
    request: { modelName: 'identity_fp32', id: `r${id}`, inputs, parameters: {}, cancellation: new Cancellation(), ...request },
    ...extra,
  };
}

const values = (item: InferItem, i = 0) => Array.from(item.request.inputs[i]!.tensor.data as ArrayLike<number | bigint>);

describe('the hand-off between front-end threads and the core thread', () => {
  it('carries a turn of requests as records in the ring: the message is its end, a number, and nothing is cloned', () => {
    const { toCore, core } = channel();
    const bytes = [new TextEncoder().encode('héllo'), new Uint8Array([0, 255])];
    // The fields that go as JSON.
    const rest = {
      parameters: { mode: 'fast', n: 3, on: true },
      requestedOutputs: ['OUTPUT0'],
      priority: 2,
      timeoutMicroseconds: 5000,
      sequence: { id: 'seq-a', start: true, end: false },
      traceParent: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    };
    toCore.add(handed(1));
    toCore.add(
      handed(
        2,
        {
          modelVersion: '3',
          id: 'ünïcode-id',
          inputs: [
            { name: 'x', tensor: { dtype: 'INT64', shape: [2], data: new BigInt64Array([-5n, 2n ** 60n]) } },
            { name: 'текст', tensor: { dtype: 'BYTES', shape: [2], data: bytes } },
            { name: 'h', tensor: { dtype: 'FP16', shape: [1], data: new Uint16Array([0x3c00]) } },
          ],
          ...rest,
        },
        { modelVersion: '3', protocol: 'GRPC', unaryEndpoint: 'generate' },
      ),
    );
    const out = toCore.take();
    expect(typeof out?.message).toBe('number');
    expect(out?.transfer).toEqual([]);
    const got: InferItem[] = [];
    core.open(cross(out), (item) => got.push(item));
    expect(got.map((item) => item.id)).toEqual([1, 2]);
    const [first, second] = got as [InferItem, InferItem];
    expect(first).toMatchObject({ modelName: 'identity_fp32', modelVersion: undefined, protocol: 'HTTP', unaryEndpoint: undefined, headers: undefined });
    expect(first.request).toMatchObject({ modelName: 'identity_fp32', id: 'r1', parameters: {} });
    expect(first.request.inputs[0]!.tensor).toMatchObject({ dtype: 'FP32', shape: [1, 2] });
    expect(first.request.inputs[0]!.tensor.data).toBeInstanceOf(Float32Array);
    expect(values(first)).toEqual([1, 1.5]);
    expect(second).toMatchObject({ modelVersion: '3', protocol: 'GRPC', unaryEndpoint: 'generate' });
    expect(second.request).toMatchObject({
      modelVersion: '3',
      id: 'ünïcode-id',
      ...rest,
    });
    expect(second.request.inputs.map((t) => t.name)).toEqual(['x', 'текст', 'h']);
    expect(second.request.inputs[0]!.tensor.data).toBeInstanceOf(BigInt64Array);
    expect(values(second, 0)).toEqual([-5n, 2n ** 60n]);
    const strings = second.request.inputs[1]!.tensor.data as Uint8Array[];
    expect(strings.map((s) => Buffer.from(s).toString())).toEqual(['héllo', '\u0000\uFFFD']);
    expect(Array.from(strings[1]!)).toEqual([0, 255]);
    expect(second.request.inputs[2]!.tensor.data).toBeInstanceOf(Uint16Array);
    expect(values(second, 2)).toEqual([0x3c00]);
    // What stays on the front-end thread does not cross.
    expect('cancellation' in first.request).toBe(false);
  });

  it("copies a request's bytes when it is added: the transport may reuse its buffer at once", () => {
    const { toCore, core } = channel();
    const item = handed(7);
    toCore.add(item);
    (item.request.inputs[0]!.tensor.data as Float32Array).fill(0);
    const got: InferItem[] = [];
    core.open(cross(toCore.take()), (i) => got.push(i));
    expect(values(got[0]!)).toEqual([7, 7.5]);
  });

  it('sends what a record cannot carry as a structured clone, in its place among the records', () => {
    const { toCore, core } = channel();
    const large = new Float32Array(8 * 1024).fill(2);
    toCore.add(handed(1));
    // A BigInt correlation id, headers to forward, a tensor over the records' limit, a parameter JSON would change.
    toCore.add(handed(2, { sequence: { id: 2n ** 64n - 1n, start: true, end: true } }));
    toCore.add(handed(3, {}, { headers: { 'x-user': 'a' } }));
    toCore.add(handed(4, { inputs: [{ name: 'INPUT0', tensor: { dtype: 'FP32', shape: [1, large.length], data: large } }] }));
    toCore.add(handed(5, { parameters: { weight: Number.NaN } }));
    // A field with a cycle (no record is made for it; a clone carries it).
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    toCore.add(handed(7, { chain: cyclic as never }));
    toCore.add(handed(6));
    const out = toCore.take();
    const message = out?.message as Exclude<HandOff<InferItem>, number>;
    expect(message.extras?.map((e) => e.id)).toEqual([2, 3, 4, 5, 7]);
    const got: InferItem[] = [];
    core.open(cross(out), (item) => got.push(item));
    expect(got.map((item) => item.id)).toEqual([1, 2, 3, 4, 5, 7, 6]);
    expect(got[1]!.request.sequence?.id).toBe(2n ** 64n - 1n);
    expect(got[2]!.headers).toEqual({ 'x-user': 'a' });
    expect(values(got[3]!).every((v) => v === 2)).toBe(true);
    expect(got[3]!.request.inputs[0]!.tensor.data).toHaveLength(8 * 1024);
    expect(got[4]!.request.parameters.weight).toBeNaN();
    const arrived = got[5]!.request.chain as unknown as Record<string, unknown>;
    expect(arrived.self).toBe(arrived);
    expect(values(got[6]!)).toEqual([6, 6.5]);
  });

  it('keeps the numbering of names when a record is taken back: a name the cloned request carried is sent again', () => {
    const { send } = channel();
    // The first request with this model and tensor name cannot go as a record (its tensor is too large), found
    // only once its names were written: the record is taken back, and with it the names' numbers.
    const large = new Float32Array(8 * 1024);
    const rewound = { modelName: 'other_model', request: { modelName: 'other_model', id: 'a', inputs: [{ name: 'IN', tensor: { dtype: 'FP32' as const, shape: [1, large.length], data: large } }], parameters: {}, cancellation: new Cancellation() } };
    const small = [{ name: 'IN', tensor: { dtype: 'FP32' as const, shape: [1], data: new Float32Array([1]) } }];
    const follows = { modelName: 'other_model', request: { ...rewound.request, id: 'b', inputs: small } };
    const got = send({ ...handed(1), ...rewound }, { ...handed(2), ...follows }, { ...handed(3), ...follows });
    expect(got.map((item) => [item.id, item.modelName, item.request.modelName, item.request.inputs[0]!.name])).toEqual([
      [1, 'other_model', 'other_model', 'IN'],
      [2, 'other_model', 'other_model', 'IN'],
      [3, 'other_model', 'other_model', 'IN'],
    ]);
    // And across turns.
    expect(send({ ...handed(4), ...follows }).map((item) => [item.modelName, item.request.inputs[0]!.name])).toEqual([['other_model', 'IN']]);
  });

  it('wraps around the ring turn after turn, and moves a turn too large for it in a buffer of its own', () => {
    const { send, toCore } = channel(ringMemory(1024));
    for (let turn = 0; turn < 50; turn++) {
      const items = Array.from({ length: 1 + (turn % 3) }, (_, i) => handed(turn * 10 + i, { id: `turn-${turn}-${'x'.repeat(turn % 7)}` }));
      const got = send(...items);
      expect(got.map((item) => [item.id, item.request.id, ...values(item)])).toEqual(items.map((h) => [h.id, h.request.id, h.id, h.id + 0.5]));
    }
    // More than a quarter of the ring: its records move in a transferred buffer, in order with the ring's turns.
    const many = Array.from({ length: 8 }, (_, i) => handed(1000 + i));
    for (const item of many) toCore.add(item);
    const out = toCore.take();
    expect(typeof out?.message).toBe('object');
    expect((out?.message as { bytes?: ArrayBuffer }).bytes).toBeInstanceOf(ArrayBuffer);
    expect(send(...many).map((item) => item.id)).toEqual(many.map((h) => h.id));
    expect(send(handed(2000)).map((item) => values(item))).toEqual([[2000, 2000.5]]);
  });

  it('uses a buffer of its own while the receiver has not taken earlier turns, and the ring again once it has', () => {
    const memory = ringMemory(1024);
    const toCore = new Outbox<Handed, InferItem>(memory, encodeHanded, packHanded);
    const core = new Inbox<InferItem, InferItem>(memory, decodeHanded, (item) => item);
    const pending: HandOff<InferItem>[] = [];
    for (let i = 0; i < 40; i++) {
      toCore.add(handed(i));
      pending.push(cross(toCore.take()));
    }
    // The ring filled: later turns went in buffers.
    expect(pending.some((m) => typeof m === 'number')).toBe(true);
    expect(pending.some((m) => typeof m === 'object' && m.bytes !== undefined)).toBe(true);
    const got: number[] = [];
    for (const m of pending) core.open(m, (item) => got.push(item.id, ...(values(item) as number[])));
    expect(got).toEqual(Array.from({ length: 40 }, (_, i) => [i, i, i + 0.5]).flat());
    toCore.add(handed(99));
    expect(typeof toCore.take()?.message).toBe('number');
  });

  it('carries responses and errors back: outputs copied out of the batch, parameters, the final flag', () => {
    const memory = ringMemory();
    const toFrontEnd = new Outbox<Outgoing, ResultItem>(memory, encodeOutgoing, packOutgoing);
    const frontEnd = new Inbox<ResultItem, ResultItem>(memory, decodeOutgoing, (item) => item);
    const batch = new Float32Array([1, 2, 3, 4, 5, 6]);
    const response = (id: string, parameters?: InferenceResponse['parameters']): InferenceResponse => ({
      id,
      modelName: 'm',
      modelVersion: '1',
      outputs: [{ name: 'OUTPUT0', tensor: { dtype: 'FP32', shape: [1, 2], data: batch.subarray(2, 4) } }],
      ...(parameters ? { parameters } : {}),
    });
    toFrontEnd.add({ id: 1, response: response('a'), final: true });
    toFrontEnd.add({ id: 2, response: response('b', { triton_final_response: false, step: 1 }), final: false });
    toFrontEnd.add({ id: 2, error: { code: 'UNAVAILABLE', message: 'model "m" is not ready' } });
    toFrontEnd.add({ id: 3, response: response('c', { big: 5n }), final: true });
    batch.fill(0);
    const got: ResultItem[] = [];
    frontEnd.open(cross(toFrontEnd.take()), (item) => got.push(item));
    expect(got).toHaveLength(4);
    const [a, b, error, c] = got as [Extract<ResultItem, { response: unknown }>, Extract<ResultItem, { response: unknown }>, ResultItem, Extract<ResultItem, { response: unknown }>];
    expect(a).toMatchObject({ id: 1, final: true, response: { id: 'a', modelName: 'm', modelVersion: '1' } });
    expect('parameters' in a.response).toBe(false);
    expect(a.response.outputs[0]!.tensor.data).toBeInstanceOf(Float32Array);
    expect(Array.from(a.response.outputs[0]!.tensor.data as Float32Array)).toEqual([3, 4]);
    expect(b).toMatchObject({ id: 2, final: false, response: { id: 'b', parameters: { triton_final_response: false, step: 1 } } });
    expect(error).toEqual({ id: 2, error: { code: 'UNAVAILABLE', message: 'model "m" is not ready' } });
    // A BigInt parameter: the response went as a structured clone, in its place.
    expect(c.response.parameters).toEqual({ big: 5n });
    expect(Array.from(c.response.outputs[0]!.tensor.data as Float32Array)).toEqual([3, 4]);
  });
});
